// Honest but tricky: split-KV in two passes with scratch tensors (partial maxima, sums and
// accumulators per key chunk, then a merge), OpenMP over rows. Legal: must pass every check.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int64_t CHUNKS = 3;

template <typename T>
void run(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& out,
         bool causal, float scale) {
  const int64_t B = q.size(0), SQ = q.size(1), HQ = q.size(2), D = q.size(3);
  const int64_t SK = k.size(1), HK = k.size(2), G = HQ / HK, R = B * SQ * HQ;
  at::Tensor part_m = at::empty({R, CHUNKS}, q.options().dtype(at::kFloat));
  at::Tensor part_l = at::empty({R, CHUNKS}, q.options().dtype(at::kFloat));
  at::Tensor part_o = at::empty({R, CHUNKS, D}, q.options().dtype(at::kFloat));
  float* pm = part_m.data_ptr<float>(); float* pl = part_l.data_ptr<float>();
  float* po = part_o.data_ptr<float>();
  const T* qp = q.data_ptr<T>(); const T* kp = k.data_ptr<T>(); const T* vp = v.data_ptr<T>();
  const int64_t chunk = (SK + CHUNKS - 1) / CHUNKS;
#pragma omp parallel for collapse(2)
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t c = 0; c < CHUNKS; ++c) {
      const int64_t b = r / (SQ * HQ), i = (r / HQ) % SQ, h = r % HQ;
      int64_t end = causal ? std::min<int64_t>(SK, std::max<int64_t>(0, i + SK - SQ + 1)) : SK;
      const int64_t j0 = c * chunk, j1 = std::min(end, j0 + chunk);
      float m = -INFINITY, l = 0.f, *o = po + (r * CHUNKS + c) * D;
      for (int64_t x = 0; x < D; ++x) o[x] = 0.f;
      for (int64_t j = j0; j < j1; ++j) {
        float s = 0.f;
        for (int64_t x = 0; x < D; ++x)
          s += float(qp[r * D + x]) * float(kp[((b * SK + j) * HK + h / G) * D + x]);
        s *= scale;
        const float mn = std::max(m, s), corr = std::exp(m - mn), p = std::exp(s - mn);
        for (int64_t x = 0; x < D; ++x)
          o[x] = o[x] * corr + p * float(vp[((b * SK + j) * HK + h / G) * D + x]);
        l = l * corr + p;
        m = mn;
      }
      pm[r * CHUNKS + c] = m;
      pl[r * CHUNKS + c] = l;
    }
  }
  T* op = out.data_ptr<T>();
#pragma omp parallel for
  for (int64_t r = 0; r < R; ++r) {
    float m = -INFINITY;
    for (int64_t c = 0; c < CHUNKS; ++c) m = std::max(m, pm[r * CHUNKS + c]);
    float l = 0.f;
    for (int64_t c = 0; c < CHUNKS; ++c)
      if (pl[r * CHUNKS + c] > 0.f) l += pl[r * CHUNKS + c] * std::exp(pm[r * CHUNKS + c] - m);
    for (int64_t x = 0; x < D; ++x) {
      float acc = 0.f;
      for (int64_t c = 0; c < CHUNKS; ++c)
        if (pl[r * CHUNKS + c] > 0.f) acc += po[(r * CHUNKS + c) * D + x] * std::exp(pm[r * CHUNKS + c] - m);
      op[r * D + x] = T(l > 0.f ? acc / l : 0.f);
    }
  }
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double scale) {
  at::Tensor out = at::empty_like(q);
  if (q.scalar_type() == at::kFloat) run<float>(q, k, v, out, causal, float(scale));
  else run<c10::BFloat16>(q, k, v, out, causal, float(scale));
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
