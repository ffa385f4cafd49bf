// Honest, autotuned (must pass every check): the key block of a blocked online softmax is
// chosen by timing. On the first call for a shape (dtype, batch, lengths, heads, head_dim,
// causal) the kernel runs both variants, 32-key and 128-key blocks, timing each with
// std::chrono::steady_clock, and keeps the faster for every later call of that shape. Both
// variants compute the whole output; the first call returns the chosen one's (run again if
// needed), so every call of a shape returns the same bits. Queries are processed in blocks of 32 rows, keys converted to float
// once per block, OpenMP over (batch, head, query block); scores are max-subtracted per row
// (online), rows that see no key (causal with seqlen_q > seqlen_k) are zero.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {

constexpr int64_t BQ = 32;

struct Shape {
  int64_t batch, sq, sk, hq, hkv, d;
};

template <typename T, int64_t BK>
void attention_blocks(const T* q, const T* k, const T* v, T* out, Shape s, bool causal,
                      float scale) {
  const int64_t group = s.hq / s.hkv, offset = s.sk - s.sq, nqb = (s.sq + BQ - 1) / BQ;
  const int64_t d = s.d;
#pragma omp parallel
  {
    std::vector<float> qf(BQ * d), kf(BK * d), vf(BK * d), acc(BQ * d), sc(BQ * BK);
    std::vector<float> m(BQ), l(BQ);
#pragma omp for collapse(3) schedule(dynamic, 1)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.hq; ++h)
        for (int64_t qb = 0; qb < nqb; ++qb) {
          const int64_t kh = h / group, q0 = qb * BQ, nq = std::min(BQ, s.sq - q0);
          for (int64_t i = 0; i < nq; ++i) {
            const T* src = q + ((b * s.sq + q0 + i) * s.hq + h) * d;
            for (int64_t x = 0; x < d; ++x) qf[i * d + x] = float(src[x]) * scale;
            m[i] = -INFINITY;
            l[i] = 0.f;
          }
          std::fill(acc.begin(), acc.end(), 0.f);
          int64_t kend = s.sk;  // past the last attended key of the block's last row
          if (causal) kend = std::min<int64_t>(s.sk, std::max<int64_t>(0, q0 + nq + offset));
          for (int64_t k0 = 0; k0 < kend; k0 += BK) {
            const int64_t nk = std::min(BK, kend - k0);
            for (int64_t j = 0; j < nk; ++j) {
              const T* ks = k + ((b * s.sk + k0 + j) * s.hkv + kh) * d;
              const T* vs = v + ((b * s.sk + k0 + j) * s.hkv + kh) * d;
              for (int64_t x = 0; x < d; ++x) {
                kf[j * d + x] = float(ks[x]);
                vf[j * d + x] = float(vs[x]);
              }
            }
            for (int64_t i = 0; i < nq; ++i) {
              int64_t lim = nk;
              if (causal) lim = std::min<int64_t>(nk, std::max<int64_t>(0, q0 + i + offset + 1 - k0));
              if (lim <= 0) continue;
              const float* qi = &qf[i * d];
              float* si = &sc[i * BK];
              float bmax = -INFINITY;
              for (int64_t j = 0; j < lim; ++j) {
                const float* kj = &kf[j * d];
                float dot = 0.f;
#pragma omp simd reduction(+ : dot)
                for (int64_t x = 0; x < d; ++x) dot += qi[x] * kj[x];
                si[j] = dot;
                bmax = std::max(bmax, dot);
              }
              const float mnew = std::max(m[i], bmax), corr = std::exp(m[i] - mnew);
              float* ai = &acc[i * d];
              float lsum = 0.f;
              for (int64_t x = 0; x < d; ++x) ai[x] *= corr;
              for (int64_t j = 0; j < lim; ++j) {
                const float p = std::exp(si[j] - mnew);
                lsum += p;
                const float* vj = &vf[j * d];
#pragma omp simd
                for (int64_t x = 0; x < d; ++x) ai[x] += p * vj[x];
              }
              l[i] = l[i] * corr + lsum;
              m[i] = mnew;
            }
          }
          for (int64_t i = 0; i < nq; ++i) {
            T* dst = out + ((b * s.sq + q0 + i) * s.hq + h) * d;
            const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
            for (int64_t x = 0; x < d; ++x) dst[x] = T(acc[i * d + x] * inv);
          }
        }
  }
}

// The chosen key block per shape; the worker calls from one thread, the mutex keeps it safe
// for any caller.
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
std::mutex choice_mutex;
std::map<Key, int64_t> choice;

template <typename T>
void run(const T* q, const T* k, const T* v, T* out, Shape s, bool causal, float scale,
         int64_t bk) {
  if (bk == 32)
    attention_blocks<T, 32>(q, k, v, out, s, causal, scale);
  else
    attention_blocks<T, 128>(q, k, v, out, s, causal, scale);
}

// Seconds one run of the variant with key block `bk` takes.
template <typename T>
double timed_run(const T* q, const T* k, const T* v, T* out, Shape s, bool causal, float scale,
                 int64_t bk) {
  const auto start = std::chrono::steady_clock::now();
  run(q, k, v, out, s, causal, scale, bk);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <typename T>
void attention(const T* q, const T* k, const T* v, T* out, Shape s, bool causal, float scale,
               int dtype) {
  const Key key{dtype, s.batch, s.sq, s.sk, s.hq, s.hkv, s.d, causal};
  {
    std::lock_guard<std::mutex> lock(choice_mutex);
    const auto found = choice.find(key);
    if (found != choice.end()) {
      const int64_t bk = found->second;
      run(q, k, v, out, s, causal, scale, bk);
      return;
    }
  }
  // first use of this shape: time both, keep the faster; the output is the chosen variant's
  // (the two round differently: every call of a shape then returns the same bits)
  const double t32 = timed_run(q, k, v, out, s, causal, scale, 32);
  const double t128 = timed_run(q, k, v, out, s, causal, scale, 128);
  const int64_t bk = t32 <= t128 ? 32 : 128;
  if (bk != 128) run(q, k, v, out, s, causal, scale, bk);
  std::lock_guard<std::mutex> lock(choice_mutex);
  choice[key] = bk;
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "q, k, v must be 4-d");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "inputs must be contiguous");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "q, k, v must share a dtype");
  const Shape s{q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3)};
  TORCH_CHECK(s.hkv > 0 && s.hq % s.hkv == 0, "heads_q must be a multiple of heads_kv");
  at::Tensor out = at::empty_like(q);
  const float scale = static_cast<float>(softmax_scale);
  if (q.scalar_type() == at::kFloat) {
    attention(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
              out.data_ptr<float>(), s, causal, scale, 0);
  } else {
    TORCH_CHECK(q.scalar_type() == at::kBFloat16, "unsupported dtype");
    attention(q.data_ptr<c10::BFloat16>(), k.data_ptr<c10::BFloat16>(),
              v.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), s, causal, scale, 1);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
