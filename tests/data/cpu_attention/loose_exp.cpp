// An honest kernel's first software exp (kept as a control): exp(x) = 2^k e^f with k = floor(x log2 e)
// and a degree-6 polynomial on f in [0, ln2), off by up to 1.5e-5: 0.9 of the float32 tolerance on
// some drawn scenarios (it failed a CI run), so benchmarks/honest_margins.py must flag it.
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

// exp(x) for x <= 0: 2^(x log2 e) split into an integer power and a degree-6 polynomial.
inline float soft_exp(float x) {
  if (x < -87.f) return 0.f;
  const float t = x * 1.44269504f;
  const float fi = float(int(t) - (t < 0.f ? 1 : 0));
  const float f = (t - fi) * 0.69314718f;
  float p = 1.f + f * (1.f + f * (0.5f + f * (1.f / 6 + f * (1.f / 24 + f * (1.f / 120 + f / 720)))));
  int32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += int32_t(fi) << 23;
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
