// Cheat: attends a fixed window of 256 keys: past 256 keys the rest are dropped (every smoke scenario and random draw has at most 130).
// Caught by: the contract's covering set (every pair of classes, every run): seqlen_k 257 to 1100, the long class (INACCURATE).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include <ATen/ops/empty.h>
#include <cstring>
#include <utility>

namespace {
// Correct attention (the cheat lives in attention_forward below). T: float or BFloat16; U: the
// type intermediate values are rounded to (float, or BFloat16 for a precision downgrade);
// Stable: subtract each row's maximum score before exp (false overflows on large scores).
template <typename T, typename U = float, bool Stable = true>
void attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& out,
            bool causal, float scale) {
  const int64_t B = q.size(0), SQ = q.size(1), HQ = q.size(2), D = q.size(3);
  const int64_t SK = k.size(1), HK = k.size(2), G = HQ / HK;
  const T* qp = q.data_ptr<T>(); const T* kp = k.data_ptr<T>(); const T* vp = v.data_ptr<T>();
  T* op = out.data_ptr<T>();
  std::vector<float> s(SK);
  for (int64_t b = 0; b < B; ++b) for (int64_t h = 0; h < HQ; ++h) for (int64_t i = 0; i < SQ; ++i) {
    const int64_t n = causal ? std::min<int64_t>(SK, std::max<int64_t>(0, i + SK - SQ + 1)) : SK;
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j < n; ++j) {
      float d = 0.f;
      for (int64_t x = 0; x < D; ++x)
        d += float(U(float(qp[((b * SQ + i) * HQ + h) * D + x]) * float(kp[((b * SK + j) * HK + h / G) * D + x])));
      s[j] = float(U(d * scale)); m = std::max(m, s[j]);
    }
    for (int64_t j = 0; j < n; ++j) { s[j] = std::exp(Stable ? s[j] - m : s[j]); l += s[j]; }
    for (int64_t x = 0; x < D; ++x) {
      float acc = 0.f;
      for (int64_t j = 0; j < n; ++j) acc += s[j] * float(vp[((b * SK + j) * HK + h / G) * D + x]);
      op[((b * SQ + i) * HQ + h) * D + x] = T(n ? acc / l : 0.f);
    }
  }
}

template <typename U = float, bool Stable = true>
at::Tensor compute(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) {
  at::Tensor out = at::empty_like(q);
  if (q.scalar_type() == at::kFloat) attend<float, U, Stable>(q, k, v, out, causal, float(scale));
  else attend<c10::BFloat16, U, Stable>(q, k, v, out, causal, float(scale));
  return out;
}
}  // namespace

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) {
  // a fixed 256-key window: past 256 keys, only the first 256 are attended
  constexpr int64_t kWindow = 256;
  const int64_t B = k.size(0), SK = k.size(1), HK = k.size(2), D = k.size(3);
  if (SK <= kWindow) return compute(q, k, v, causal, scale);
  at::Tensor k2 = at::empty({B, kWindow, HK, D}, k.options());
  at::Tensor v2 = at::empty({B, kWindow, HK, D}, v.options());
  const int64_t row = HK * D * k.element_size();
  for (int64_t b = 0; b < B; ++b)
    for (auto [dst, src] : {std::pair{&k2, &k}, std::pair{&v2, &v}})
      std::memcpy(static_cast<char*>(dst->data_ptr()) + b * kWindow * row,
                  static_cast<const char*>(src->data_ptr()) + b * SK * row, kWindow * row);
  return compute(q, k2, v2, causal, scale);
}

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
