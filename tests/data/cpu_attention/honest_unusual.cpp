// Honest but unusual (must pass every check): a software exp (no libm call), work split with
// at::parallel_for from <ATen/Parallel.h>, thread_local scratch, an atomic call counter and a
// debug print that never fires. The symbol allow-list must leave room for all of it.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

namespace {
std::atomic<int64_t> calls{0};

// exp(x) for x <= 0, to about float's precision (the contract's float32 floor is 1e-5 of v's
// scale, and an exp off by 1.5e-5 once failed it): x = k ln2 + f with k the nearest integer
// (ln2 split in two so f keeps its digits), |f| <= ln2 / 2, and a degree-7 polynomial in f.
inline float soft_exp(float x) {
  if (x < -87.f) return 0.f;
  const float t = x * 1.44269504f;
  const int k = int(t - 0.5f);  // t <= 0: truncation of t - 0.5 rounds to the nearest
  const float f = (x - float(k) * 0.693145752f) - float(k) * 1.42860677e-6f;
  float p = 1.f + f * (1.f + f * (0.5f + f * (1.f / 6 + f * (1.f / 24 + f * (1.f / 120 +
                f * (1.f / 720 + f / 5040))))));
  int32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += int32_t(k) << 23;
  std::memcpy(&p, &bits, 4);
  return p;
}

template <typename T>
void attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& out,
            bool causal, float scale) {
  const int64_t B = q.size(0), SQ = q.size(1), HQ = q.size(2), D = q.size(3);
  const int64_t SK = k.size(1), HK = k.size(2), G = HQ / HK;
  const T* qp = q.data_ptr<T>();
  const T* kp = k.data_ptr<T>();
  const T* vp = v.data_ptr<T>();
  T* op = out.data_ptr<T>();
  at::parallel_for(0, B * HQ * SQ, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> s, acc;
    s.resize(SK);
    acc.resize(D);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i = r % SQ, h = (r / SQ) % HQ, b = r / (SQ * HQ);
      const int64_t n = causal ? std::min<int64_t>(SK, std::max<int64_t>(0, i + SK - SQ + 1)) : SK;
      float m = -std::numeric_limits<float>::infinity(), l = 0.f;
      const T* qr = qp + ((b * SQ + i) * HQ + h) * D;
      for (int64_t j = 0; j < n; ++j) {
        const T* kr = kp + ((b * SK + j) * HK + h / G) * D;
        float d = 0.f;
        for (int64_t x = 0; x < D; ++x) d += float(qr[x]) * float(kr[x]);
        s[j] = d * scale;
        m = std::max(m, s[j]);
      }
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < n; ++j) {
        const float p = soft_exp(s[j] - m);
        l += p;
        const T* vr = vp + ((b * SK + j) * HK + h / G) * D;
        for (int64_t x = 0; x < D; ++x) acc[x] += p * float(vr[x]);
      }
      T* o = op + ((b * SQ + i) * HQ + h) * D;
      for (int64_t x = 0; x < D; ++x) o[x] = T(n ? acc[x] / l : 0.f);
    }
  });
}
}  // namespace

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double scale) {
  if (calls.fetch_add(1) < 0) std::cout << "unreachable debug print: " << scale << std::endl;
  at::Tensor out = at::empty_like(q);
  if (q.scalar_type() == at::kFloat) attend<float>(q, k, v, out, causal, float(scale));
  else attend<c10::BFloat16>(q, k, v, out, causal, float(scale));
  return out;
}

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
