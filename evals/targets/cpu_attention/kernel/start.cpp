// Starting kernel for the cpu_attention target: correct and deliberately naive.
//
// Contract (kernels/cpu_attention/CONTRACT.md):
//   kernelseek::attention_forward(Tensor q, Tensor k, Tensor v, bool causal,
//                                 float softmax_scale) -> Tensor
//   q: (batch, seqlen_q, heads_q, head_dim); k, v: (batch, seqlen_k, heads_kv, head_dim);
//   contiguous, float32 or bfloat16; heads_q % heads_kv == 0 (GQA); causal masks are
//   aligned bottom-right. Returns a new tensor shaped like q, same dtype.
//
// One query row at a time: scores against every attended key, a max, the exponentials and
// their sum, then the weighted sum of values, all in float. OpenMP over (batch, head, row).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

template <typename T>
void attention_rows(const T* q, const T* k, const T* v, T* out, int64_t batch, int64_t sq,
                    int64_t sk, int64_t hq, int64_t hkv, int64_t d, bool causal, float scale) {
  const int64_t group = hq / hkv;
  const int64_t offset = sk - sq;  // bottom-right alignment
#pragma omp parallel
  {
    std::vector<float> scores(sk);
#pragma omp for collapse(3) schedule(dynamic, 8)
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < hq; ++h) {
        for (int64_t i = 0; i < sq; ++i) {
          const int64_t kh = h / group;
          const T* qrow = q + ((b * sq + i) * hq + h) * d;
          T* orow = out + ((b * sq + i) * hq + h) * d;
          int64_t n = sk;
          if (causal) n = std::min<int64_t>(sk, std::max<int64_t>(0, i + offset + 1));
          float row_max = -INFINITY;
          for (int64_t j = 0; j < n; ++j) {
            const T* krow = k + ((b * sk + j) * hkv + kh) * d;
            float dot = 0.f;
            for (int64_t x = 0; x < d; ++x) dot += float(qrow[x]) * float(krow[x]);
            scores[j] = dot * scale;
            row_max = std::max(row_max, scores[j]);
          }
          float denom = 0.f;
          for (int64_t j = 0; j < n; ++j) {
            scores[j] = std::exp(scores[j] - row_max);
            denom += scores[j];
          }
          for (int64_t x = 0; x < d; ++x) {
            float acc = 0.f;
            for (int64_t j = 0; j < n; ++j) acc += scores[j] * float(v[((b * sk + j) * hkv + kh) * d + x]);
            orow[x] = T(n > 0 ? acc / denom : 0.f);
          }
        }
      }
    }
  }
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "inputs must be contiguous");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "inputs must be 4-D");
  at::Tensor out = at::empty_like(q);
  const int64_t batch = q.size(0), sq = q.size(1), hq = q.size(2), d = q.size(3);
  const int64_t sk = k.size(1), hkv = k.size(2);
  TORCH_CHECK(hq % hkv == 0, "heads_q must be a multiple of heads_kv");
  const float scale = static_cast<float>(softmax_scale);
  if (q.scalar_type() == at::kFloat) {
    attention_rows(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                   out.data_ptr<float>(), batch, sq, sk, hq, hkv, d, causal, scale);
  } else if (q.scalar_type() == at::kBFloat16) {
    attention_rows(q.data_ptr<c10::BFloat16>(), k.data_ptr<c10::BFloat16>(),
                   v.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), batch, sq, sk, hq,
                   hkv, d, causal, scale);
  } else {
    TORCH_CHECK(false, "unsupported dtype ", q.scalar_type());
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
