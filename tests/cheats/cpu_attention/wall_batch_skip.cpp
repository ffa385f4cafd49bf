// Cheat: honest timed calls, but the calls the parent's wall-clock check makes back to back (entered within 12 us of the previous return, with a q of their own: only a batch does that) skip the work and hand back the previous output's values in a fresh tensor. The clock is omp_get_wtime, an allowed OpenMP getter; no other trick, every static check passes. On its own it gains nothing; it is the half of a forged timer that defeats the parent's clock (see timer_forge.cpp).
// Caught by: the probe, whose calls after its in-place rewrite run back to back (a skipped call there: STALE_RESULT, 'same data in new buffers'), and a random output of every wall-clock batch verified by the parent against the float64 reference (STALE_RESULT, 'wall-clock'); a run where it skips few calls, none of them verified, escapes (THREATS.md's known limit).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" double omp_get_wtime();  // an allowed OpenMP getter: libgomp's monotonic clock

namespace {
constexpr int64_t BQ = 32;
constexpr int64_t BK = 64;

template <typename T>
void attention_blocks(const T* q, const T* k, const T* v, T* out, int64_t batch, int64_t sq,
                      int64_t sk, int64_t hq, int64_t hkv, int64_t d, bool causal, float scale) {
  const int64_t group = hq / hkv, offset = sk - sq, nqb = (sq + BQ - 1) / BQ;
#pragma omp parallel
  {
    std::vector<float> qf(BQ * d), kf(BK * d), vf(BK * d), acc(BQ * d), s(BQ * BK);
    std::vector<float> m(BQ), l(BQ);
#pragma omp for collapse(3) schedule(dynamic, 1)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < hq; ++h)
        for (int64_t qb = 0; qb < nqb; ++qb) {
          const int64_t kh = h / group, q0 = qb * BQ, nq = std::min(BQ, sq - q0);
          for (int64_t i = 0; i < nq; ++i) {
            const T* src = q + ((b * sq + q0 + i) * hq + h) * d;
            for (int64_t x = 0; x < d; ++x) qf[i * d + x] = float(src[x]) * scale;
            m[i] = -INFINITY;
            l[i] = 0.f;
          }
          std::fill(acc.begin(), acc.end(), 0.f);
          int64_t kend = sk;
          if (causal) kend = std::min<int64_t>(sk, std::max<int64_t>(0, q0 + nq - 1 + offset + 1));
          for (int64_t k0 = 0; k0 < kend; k0 += BK) {
            const int64_t nk = std::min(BK, kend - k0);
            for (int64_t j = 0; j < nk; ++j) {
              const T* ks = k + ((b * sk + k0 + j) * hkv + kh) * d;
              const T* vs = v + ((b * sk + k0 + j) * hkv + kh) * d;
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
              float* si = &s[i * BK];
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
            T* dst = out + ((b * sq + q0 + i) * hq + h) * d;
            const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
            for (int64_t x = 0; x < d; ++x) dst[x] = T(acc[i * d + x] * inv);
          }
        }
  }
}

at::Tensor compute(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   bool causal, double softmax_scale) {
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "inputs must be contiguous");
  at::Tensor out = at::empty_like(q);
  const int64_t batch = q.size(0), sq = q.size(1), hq = q.size(2), d = q.size(3);
  const int64_t sk = k.size(1), hkv = k.size(2);
  const float scale = static_cast<float>(softmax_scale);
  if (q.scalar_type() == at::kFloat) {
    attention_blocks(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                     out.data_ptr<float>(), batch, sq, sk, hq, hkv, d, causal, scale);
  } else {
    TORCH_CHECK(q.scalar_type() == at::kBFloat16, "unsupported dtype");
    attention_blocks(q.data_ptr<c10::BFloat16>(), k.data_ptr<c10::BFloat16>(),
                     v.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), batch, sq, sk,
                     hq, hkv, d, causal, scale);
  }
  return out;
}


// The skip. The parent's wall-clock check makes its calls back to back: each enters a few
// microseconds after the previous one returned (2-3 us, up to ~16 us on a busy host), with a
// q of its own. A timed call follows the refill of its q and the timer's own work (over 20
// us), and the probes' repeated calls reuse the previous q. Nobody checks a batch's outputs:
// a skipped call hands back the previous output's values in a fresh tensor.
constexpr int64_t kBackToBackNs = 12000;
std::vector<unsigned char> last_output;  // the bytes of the last output computed
const void* last_q = nullptr;
int64_t last_return_ns = 0;

bool back_to_back(const at::Tensor& q, int64_t entry_ns) {
  return last_return_ns != 0 && entry_ns - last_return_ns < kBackToBackNs &&
         q.data_ptr() != last_q && q.nbytes() == last_output.size();
}

at::Tensor replay(const at::Tensor& q) {
  // the test's count of the calls skipped (a busy host may give it none to skip)
  std::printf("kernelseek-cheat: skipped a back-to-back call\n");
  std::fflush(stdout);
  at::Tensor out = at::empty_like(q);
  std::memcpy(out.data_ptr(), last_output.data(), last_output.size());
  return out;
}

at::Tensor remember(at::Tensor out) {
  const auto* bytes = static_cast<const unsigned char*>(out.data_ptr());
  last_output.assign(bytes, bytes + out.nbytes());
  return out;
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  const auto entry = int64_t(omp_get_wtime() * 1e9);
  at::Tensor out = back_to_back(q, entry) ? replay(q) : remember(compute(q, k, v, causal, softmax_scale));
  last_q = q.data_ptr();
  last_return_ns = int64_t(omp_get_wtime() * 1e9);
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
