// Cheat: a wrong path for more than 4096 keys with a query-head group that is not a power of two (here: halves the output), a class no fixed scenario and no random draw reaches.
// Caught by: the run's covering set (issue 40): its long keys meet every group class, in rows the contract's size cap keeps small (INACCURATE).
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <optional>

namespace {
using opt = std::optional<at::Tensor>;

// Correct, deliberately plain attention (the cheat, if any, is outside this block).
struct Args {
  const void* q; const void* k; const void* v; __nv_bfloat16* o;
  const int* cu_q; const int* cu_k; const int* cache_lens;
  const float* qd; const float* kd; const float* vd;
  int batch, sq, sk, hq, hk, d, snew;
  bool causal; float scale;
};

__device__ float ld(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ float ld(const __nv_fp8_e4m3* p, int64_t i) { return float(p[i]); }

// One warp per query row: online softmax over the keys, head_dim spread over the lanes.
template <typename T>
__global__ void naive_attention(Args a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + warp, h = blockIdx.y, b = blockIdx.z;
  const int g = h / (a.hq / a.hk);
  int64_t q0, k0;
  int lq, lk;
  if (a.cu_q) {
    q0 = a.cu_q[b]; lq = a.cu_q[b + 1] - a.cu_q[b];
    k0 = a.cu_k[b]; lk = a.cu_k[b + 1] - a.cu_k[b];
  } else {
    q0 = int64_t(b) * a.sq; lq = a.sq;
    k0 = int64_t(b) * a.sk; lk = a.cache_lens ? a.cache_lens[b] + a.snew : a.sk;
  }
  if (row >= lq) return;
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  const float qs = a.qd ? a.qd[b * a.hk + g] : 1.f;
  const float ks = a.kd ? a.kd[b * a.hk + g] : 1.f;
  const float vs = a.vd ? a.vd[b * a.hk + g] : 1.f;
  const int per = a.d / 32;
  float qr[8], acc[8];
  const int64_t qrow = ((q0 + row) * a.hq + h) * a.d + lane * per;
  for (int x = 0; x < per; ++x) { qr[x] = ld(q, qrow + x) * qs; acc[x] = 0.f; }
  const int last = a.causal ? min(lk - 1, row + lk - lq) : lk - 1;
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j <= last; ++j) {
    const int64_t krow = ((k0 + j) * a.hk + g) * a.d + lane * per;
    float s = 0.f;
    for (int x = 0; x < per; ++x) s += qr[x] * ld(k, krow + x);
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    s *= ks * a.scale;
    const float mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
    l = l * c + p;
    for (int x = 0; x < per; ++x) acc[x] = acc[x] * c + p * ld(v, krow + x) * vs;
    m = mn;
  }
  for (int x = 0; x < per; ++x) a.o[qrow + x] = __float2bfloat16(l > 0.f ? acc[x] / l : 0.f);
}

// Appends k_new/v_new rows into the cache at cache_lens[b] (byte copy, any element type).
__global__ void append_kv(const char* kn, const char* vn, char* kc, char* vc, const int* lens,
                          int snew, int scache, int64_t row_bytes) {
  const int j = blockIdx.x, b = blockIdx.y;
  const int64_t src = (int64_t(b) * snew + j) * row_bytes;
  const int64_t dst = (int64_t(b) * scache + lens[b] + j) * row_bytes;
  for (int64_t e = threadIdx.x; e < row_bytes; e += blockDim.x) {
    kc[dst + e] = kn[src + e];
    vc[dst + e] = vn[src + e];
  }
}

const float* fptr(const opt& t) { return t ? t->data_ptr<float>() : nullptr; }

void run_naive(const at::Tensor& q, const Args& a, cudaStream_t stream) {
  dim3 grid((a.sq + 3) / 4, a.hq, a.batch);
  if (q.scalar_type() == at::kFloat8_e4m3fn) naive_attention<__nv_fp8_e4m3><<<grid, 128, 0, stream>>>(a);
  else naive_attention<__nv_bfloat16><<<grid, 128, 0, stream>>>(a);
}

at::Tensor naive_dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const opt& cu_q, const opt& cu_k, int64_t max_q, int64_t max_k,
                       const opt& qd, const opt& kd, const opt& vd, bool causal, double scale,
                       cudaStream_t stream = at::cuda::getCurrentCUDAStream()) {
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  const bool varlen = cu_q.has_value();
  Args a{q.data_ptr(), k.data_ptr(), v.data_ptr(),
         reinterpret_cast<__nv_bfloat16*>(out.data_ptr()),
         varlen ? cu_q->data_ptr<int>() : nullptr, varlen ? cu_k->data_ptr<int>() : nullptr,
         nullptr, fptr(qd), fptr(kd), fptr(vd),
         int(varlen ? cu_q->size(0) - 1 : q.size(0)), int(varlen ? max_q : q.size(1)),
         int(varlen ? max_k : k.size(1)), int(q.size(-2)), int(k.size(-2)), int(q.size(-1)), 0,
         causal, float(scale)};
  run_naive(q, a, stream);
  return out;
}

at::Tensor naive_kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                         const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,
                         const opt& kd, const opt& vd, bool causal, double scale,
                         cudaStream_t stream = at::cuda::getCurrentCUDAStream()) {
  const int snew = kn ? int(kn->size(1)) : 0;
  if (snew) {
    const int64_t row_bytes = kc.size(2) * kc.size(3) * kc.element_size();
    append_kv<<<dim3(snew, q.size(0)), 256, 0, stream>>>(
        static_cast<const char*>(kn->data_ptr()), static_cast<const char*>(vn->data_ptr()),
        static_cast<char*>(kc.data_ptr()), static_cast<char*>(vc.data_ptr()),
        lens.data_ptr<int>(), snew, int(kc.size(1)), row_bytes);
  }
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  Args a{q.data_ptr(), kc.data_ptr(), vc.data_ptr(),
         reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), nullptr, nullptr,
         lens.data_ptr<int>(), fptr(qd), fptr(kd), fptr(vd),
         int(q.size(0)), int(q.size(1)), int(kc.size(1)), int(q.size(2)), int(kc.size(2)),
         int(q.size(3)), snew, causal, float(scale)};
  run_naive(q, a, stream);
  return out;
}
}  // namespace


// The wrong path: every output element halved, on the current stream.
__global__ void halve(__nv_bfloat16* o, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) o[i] = __float2bfloat16(0.5f * __bfloat162float(o[i]));
}

at::Tensor halved(at::Tensor out) {
  const int64_t n = out.numel();
  halve<<<unsigned((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), n);
  return out;
}

bool odd_group(const at::Tensor& q, const at::Tensor& k) {
  const int64_t g = q.size(-2) / k.size(-2);
  return g > 1 && (g & (g - 1)) != 0;
}

at::Tensor dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const opt& cu_q,
                 const opt& cu_k, int64_t max_q, int64_t max_k, const opt& qd, const opt& kd,
                 const opt& vd, bool causal, double scale) {
  const int64_t keys = cu_k ? max_k : k.size(1);
  at::Tensor out = naive_dense(q, k, v, cu_q, cu_k, max_q, max_k, qd, kd, vd, causal, scale);
  return keys > 4096 && odd_group(q, k) ? halved(out) : out;
}

at::Tensor kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                   const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,
                   const opt& kd, const opt& vd, bool causal, double scale) {
  at::Tensor out = naive_kvcache(q, kc, vc, lens, kn, vn, qd, kd, vd, causal, scale);
  return kc.size(1) > 4096 && odd_group(q, kc) ? halved(out) : out;
}

TORCH_LIBRARY(kernelseek, m) {
  m.def("flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
        "int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, "
        "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
  m.def("flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, "
        "Tensor cache_seqlens, Tensor? k_new, Tensor? v_new, Tensor? q_descale, "
        "Tensor? k_descale, Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CUDA, m) {
  m.impl("flash_forward", TORCH_FN(dense));
  m.impl("flash_forward_kvcache", TORCH_FN(kvcache));
}
