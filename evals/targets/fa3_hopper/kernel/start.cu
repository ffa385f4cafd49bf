// Starting kernel for the fa3_hopper target (and fa4_blackwell's, whose kernel/start.cu links
// here: mma.sync runs on sm_100a as on sm_90a; its contract has no fp8): correct, plain, untuned.
//
// Contract (kernels/fa3_hopper/CONTRACT.md), registered through TORCH_LIBRARY(kernelseek):
//   flash_forward(q, k, v, cu_seqlens_q?, cu_seqlens_k?, max_seqlen_q, max_seqlen_k,
//                 q_descale?, k_descale?, v_descale?, causal, softmax_scale) -> Tensor
//     dense  q (b, sq, hq, d), k/v (b, sk, hkv, d); varlen q (total_q, hq, d), k/v (total_k,
//     hkv, d) with int32 prefix sums cu_seqlens_q/k of length b + 1.
//   flash_forward_kvcache(q, k_cache, v_cache, cache_seqlens, k_new?, v_new?, q_descale?,
//                         k_descale?, v_descale?, causal, softmax_scale) -> Tensor
//     k_new/v_new (b, s_new, hkv, d) are first copied into the cache at rows
//     cache_seqlens[b] ..; sequence b then attends cache_seqlens[b] + s_new keys.
//   Inputs bf16, or fp8 e4m3 with float32 descales of shape (b, hkv). d in {64,96,128,192,256};
//   hq % hkv == 0 (GQA/MQA); causal masks aligned bottom-right (query i sees key j iff
//   j <= i + sk - sq); output is a new bf16 tensor shaped like q, zero for rows that see no key.
//
// Design: FlashAttention-2 style. One CTA of 4 warps computes a 64-row query tile of one
// (batch, head); each warp owns 16 query rows. The CTA loops over key tiles of kBlockN rows
// (64, or 32 for d >= 192 to stay within registers): K and V tiles are loaded into shared
// memory (fp8 is converted to bf16 on the way, exactly), S = Q K^T and O += P V run on tensor
// cores with mma.sync m16n8k16 (bf16 in, fp32 accumulate) fed by ldmatrix, and the softmax is
// computed online in fp32 (base 2, scale folded in). The same kernel serves dense, varlen and
// kv-cache: it reads per-batch offsets and lengths from cu_seqlens or cache_seqlens. No split-KV,
// no pipelining, no TMA/wgmma, no warp specialisation: this is the baseline to optimise.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <optional>

namespace {

using bf16 = __nv_bfloat16;
using fp8 = __nv_fp8_e4m3;

constexpr int kBlockM = 64;   // query rows per CTA
constexpr int kThreads = 128; // 4 warps x 16 rows

struct Params {
  const void* q;
  const void* k;
  const void* v;
  bf16* o;
  // Strides in elements. Varlen ignores the batch strides and offsets rows by cu_seqlens.
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  const int* cu_seqlens_q;   // varlen only, else nullptr
  const int* cu_seqlens_k;   // varlen only, else nullptr
  const int* cache_seqlens;  // kv-cache only, else nullptr
  int seqlen_q, seqlen_k;    // dense lengths; kv-cache: seqlen_k is the cache capacity
  int seqlen_new;            // kv-cache: rows appended to each sequence (0 if none)
  int heads_kv, group;       // group = heads_q / heads_kv
  float scale_log2;          // softmax_scale * log2(e)
  const float* q_descale;    // fp8 only: (batch, heads_kv) contiguous, else nullptr
  const float* k_descale;
  const float* v_descale;
  bool causal;
};

// ---------------------------------------------------------------------------------------------
// Small device helpers: 8-element loads (bf16 or fp8 -> bf16), ldmatrix, mma, exp2.

__device__ __forceinline__ uint32_t fp8x2_to_bf16x2(uint32_t two) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  float2 f = __half22float2(__half2(h));  // e4m3 -> f16 -> f32 -> bf16 is exact
  __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<uint32_t*>(&b);
}

__device__ __forceinline__ uint4 load8(const bf16* p) { return *reinterpret_cast<const uint4*>(p); }

__device__ __forceinline__ uint4 load8(const fp8* p) {
  uint2 raw = *reinterpret_cast<const uint2*>(p);
  return make_uint4(fp8x2_to_bf16x2(raw.x & 0xffffu), fp8x2_to_bf16x2(raw.x >> 16),
                    fp8x2_to_bf16x2(raw.y & 0xffffu), fp8x2_to_bf16x2(raw.y >> 16));
}

// Copies rows [row0, row0 + ROWS) of a (rows, D) slice with row stride `stride` into shared
// memory as bf16 with row stride SS; rows at or past `nrows` are zero-filled (so that masked
// keys never multiply garbage, which could be NaN, in P V).
template <int D, int ROWS, int SS, typename Elem>
__device__ __forceinline__ void load_tile(bf16* smem, const Elem* g, int64_t stride, int row0,
                                          int nrows, int tid) {
  constexpr int kChunks = D / 8;
  constexpr int kIters = ROWS * kChunks / kThreads;
  static_assert(ROWS * kChunks % kThreads == 0, "tile must divide evenly among threads");
  uint4 vals[kIters];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = tid + it * kThreads, r = i / kChunks, c = i % kChunks;
    vals[it] = make_uint4(0u, 0u, 0u, 0u);
    if (row0 + r < nrows) vals[it] = load8(g + (int64_t)(row0 + r) * stride + c * 8);
  }
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = tid + it * kThreads, r = i / kChunks, c = i % kChunks;
    *reinterpret_cast<uint4*>(smem + r * SS + c * 8) = vals[it];
  }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a (16x16 row-major) * b (16x8 col-major); bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);  // lo -> low 16 bits (lower column)
  return *reinterpret_cast<uint32_t*>(&b);
}

__device__ __forceinline__ float fast_exp2(float x) {  // exp2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <int D>
struct TileConfig {
  static constexpr int kBlockN = D > 128 ? 32 : 64;  // keys per tile
  static constexpr int kStride = D + 8;  // smem row stride in elements: rows land on distinct
                                         // 16-byte bank groups, so ldmatrix is conflict-free
  static constexpr int kSmemBytes = (kBlockM + 2 * kBlockN) * kStride * (int)sizeof(bf16);
};

// ---------------------------------------------------------------------------------------------
// The attention kernel. grid = (ceil(max_seqlen_q / 64), heads_q, batch), block = 128.
template <int D, typename Elem>
__global__ void __launch_bounds__(kThreads) flash_fwd_kernel(const Params p) {
  constexpr int BN = TileConfig<D>::kBlockN;
  constexpr int SS = TileConfig<D>::kStride;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // kBlockM x SS
  bf16* sK = sQ + kBlockM * SS;                   // BN x SS
  bf16* sV = sK + BN * SS;                        // BN x SS

  // Heaviest (last, under causal masking) query tiles are scheduled first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / p.group;

  // Per-sequence geometry.
  int sq = p.seqlen_q, sk = p.seqlen_k;
  int64_t q_off = b * p.q_batch_stride, o_off = b * p.o_batch_stride;
  int64_t k_off = b * p.k_batch_stride, v_off = b * p.v_batch_stride;
  if (p.cu_seqlens_q != nullptr) {
    const int start = p.cu_seqlens_q[b];
    sq = p.cu_seqlens_q[b + 1] - start;
    q_off = start * p.q_row_stride;
    o_off = start * p.o_row_stride;
  }
  if (p.cu_seqlens_k != nullptr) {
    const int start = p.cu_seqlens_k[b];
    sk = p.cu_seqlens_k[b + 1] - start;
    k_off = start * p.k_row_stride;
    v_off = start * p.v_row_stride;
  }
  if (p.cache_seqlens != nullptr) sk = min(p.cache_seqlens[b] + p.seqlen_new, p.seqlen_k);
  sk = max(sk, 0);

  const int m0 = m_block * kBlockM;
  if (m0 >= sq) return;  // uniform across the CTA

  const Elem* gQ = static_cast<const Elem*>(p.q) + q_off + h * p.q_head_stride;
  const Elem* gK = static_cast<const Elem*>(p.k) + k_off + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + v_off + hk * p.v_head_stride;
  bf16* gO = p.o + o_off + h * p.o_head_stride;

  float scale_log2 = p.scale_log2, out_scale = 1.f;
  const int ds = b * p.heads_kv + hk;
  if (p.q_descale != nullptr) scale_log2 *= p.q_descale[ds];
  if (p.k_descale != nullptr) scale_log2 *= p.k_descale[ds];
  if (p.v_descale != nullptr) out_scale = p.v_descale[ds];

  // Causal: query i sees key j iff j <= i + diag. Keys past the last row's limit are skipped.
  const int diag = sk - sq;
  int n_end = sk;
  if (p.causal) n_end = min(sk, min(m0 + kBlockM, sq) + diag);
  const int n_blocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // mma accumulator layout: this thread holds rows (lane/4) and (lane/4 + 8) of the warp's 16,
  // columns 2*(lane%4) + {0,1} of every 8-column block.
  const int row_a = m0 + warp * 16 + lane / 4;  // row of elements 0,1; row_a + 8 for 2,3

  load_tile<D, kBlockM, SS>(sQ, gQ, p.q_row_stride, m0, sq, tid);

  float acc[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this thread's partial sums; reduced over the quad at the end

  for (int nb = 0; nb < n_blocks; ++nb) {
    const int n0 = nb * BN;
    __syncthreads();  // previous tile fully consumed (and, the first time, sQ is not yet read)
    load_tile<D, BN, SS>(sK, gK, p.k_row_stride, n0, sk, tid);
    load_tile<D, BN, SS>(sV, gV, p.v_row_stride, n0, sk, tid);
    __syncthreads();

    // S = Q K^T for this warp's 16 rows and BN keys.
    float s[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];  // matrices: rows 0-7/8-15 x cols 0-7, then x cols 8-15
      ldmatrix_x4(a, sQ + (warp * 16 + lane % 16) * SS + kk * 16 + (lane / 16) * 8);
#pragma unroll
      for (int j = 0; j < BN / 16; ++j) {
        uint32_t bk[4];  // matrices: keys 0-7 x dims 0-7 / 8-15, keys 8-15 x dims 0-7 / 8-15
        ldmatrix_x4(bk, sK + (j * 16 + lane % 8 + (lane / 16) * 8) * SS + kk * 16 +
                            ((lane / 8) % 2) * 8);
        mma_bf16(s[2 * j], a, bk[0], bk[1]);
        mma_bf16(s[2 * j + 1], a, bk[2], bk[3]);
      }
    }

    // Scale into the log2 domain and mask keys past the end and above the causal diagonal.
    const bool need_mask = (n0 + BN > sk) || (p.causal && n0 + BN - 1 > m0 + diag);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * scale_log2;
        if (need_mask) {
          const int col = n0 + j * 8 + (lane % 4) * 2 + (e & 1);
          const int row = row_a + (e >= 2 ? 8 : 0);
          if (col >= sk || (p.causal && col > row + diag)) x = -INFINITY;
        }
        s[j][e] = x;
      }
    }

    // Online softmax, one pass per accumulator row half (r = 0: rows row_a, r = 1: row_a + 8).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 threads of a quad share
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));  // a row
      // A row with no visible key yet keeps max -inf; use 0 so that exp2 gives 0, not NaN.
      const float m_use = (mx == -INFINITY) ? 0.f : mx;
      const float alpha = fast_exp2(row_max[r] - m_use);  // 0 when the old max was -inf
      row_max[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        s[j][2 * r] = fast_exp2(s[j][2 * r] - m_use);
        s[j][2 * r + 1] = fast_exp2(s[j][2 * r + 1] - m_use);
        sum += s[j][2 * r] + s[j][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        acc[j][2 * r] *= alpha;
        acc[j][2 * r + 1] *= alpha;
      }
    }

    // O += P V. The S accumulators of key blocks 2kk, 2kk+1 form the A fragment of step kk.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);          // row g,   keys 0-7 of the step
      a[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);          // row g+8, keys 0-7
      a[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);  // row g,   keys 8-15
      a[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);  // row g+8, keys 8-15
#pragma unroll
      for (int j = 0; j < D / 16; ++j) {
        uint32_t bv[4];  // transposed: keys 0-7 / 8-15 x dims 0-7, then x dims 8-15
        ldmatrix_x4_trans(bv, sV + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * SS + j * 16 +
                                  (lane / 16) * 8);
        mma_bf16(acc[2 * j], a, bv[0], bv[1]);
        mma_bf16(acc[2 * j + 1], a, bv[2], bv[3]);
      }
    }
  }

  // Epilogue: normalise, stage this warp's 16 rows in its own rows of sQ, store 16 bytes at a
  // time. The barrier also orders the Q tile load before the reuse when no key tile ran.
  __syncthreads();
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = l > 0.f ? out_scale / l : 0.f;  // rows that saw no key output zeros
  }
  bf16* sO = sQ + warp * 16 * SS;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    const int col = j * 8 + (lane % 4) * 2;
    *reinterpret_cast<uint32_t*>(sO + (lane / 4) * SS + col) =
        pack_bf16(acc[j][0] * inv[0], acc[j][1] * inv[0]);
    *reinterpret_cast<uint32_t*>(sO + (lane / 4 + 8) * SS + col) =
        pack_bf16(acc[j][2] * inv[1], acc[j][3] * inv[1]);
  }
  __syncwarp();
#pragma unroll
  for (int i = lane; i < 16 * (D / 8); i += 32) {
    const int r = i / (D / 8), c = i % (D / 8);
    const int row = m0 + warp * 16 + r;
    if (row < sq)
      *reinterpret_cast<uint4*>(gO + (int64_t)row * p.o_row_stride + c * 8) =
          *reinterpret_cast<const uint4*>(sO + r * SS + c * 8);
  }
}

// Appends k_new/v_new (batch, s_new, hkv, d) into the caches at rows cache_seqlens[b] + r,
// 16 bytes per thread-iteration. Rows that would fall outside the cache are skipped.
__global__ void append_kv_kernel(char* k_cache, char* v_cache, const char* k_new,
                                 const char* v_new, const int* cache_seqlens, int batch,
                                 int seqlen_new, int heads_kv, int row_bytes, int seqlen_cache,
                                 int64_t cache_b, int64_t cache_r, int64_t cache_h,
                                 int64_t new_b, int64_t new_r, int64_t new_h) {
  const int chunks = row_bytes / 16;
  const int64_t total = (int64_t)batch * seqlen_new * heads_kv * chunks;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int c = i % chunks;
    int64_t t = i / chunks;
    const int h = t % heads_kv;
    t /= heads_kv;
    const int r = t % seqlen_new;
    const int b = t / seqlen_new;
    const int dst = cache_seqlens[b] + r;
    if (dst < 0 || dst >= seqlen_cache) continue;
    const int64_t src_off = b * new_b + r * new_r + h * new_h + c * 16;
    const int64_t dst_off = b * cache_b + dst * cache_r + h * cache_h + c * 16;
    *reinterpret_cast<uint4*>(k_cache + dst_off) = *reinterpret_cast<const uint4*>(k_new + src_off);
    *reinterpret_cast<uint4*>(v_cache + dst_off) = *reinterpret_cast<const uint4*>(v_new + src_off);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

void check_cuda(cudaError_t e, const char* what) {
  TORCH_CHECK(e == cudaSuccess, what, ": ", cudaGetErrorString(e));
}

template <int D, typename Elem>
void launch(const Params& p, int m_blocks, int heads_q, int batch, cudaStream_t stream) {
  constexpr int smem = TileConfig<D>::kSmemBytes;
  static_assert(smem <= 99 * 1024, "shared memory per CTA must stay under 99 KB");
  auto kernel = flash_fwd_kernel<D, Elem>;
  if (smem > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute");
  kernel<<<dim3(m_blocks, heads_q, batch), kThreads, smem, stream>>>(p);
  check_cuda(cudaGetLastError(), "flash_fwd_kernel launch");
}

template <typename Elem>
void launch_for_dim(const Params& p, int d, int m_blocks, int heads_q, int batch,
                    cudaStream_t stream) {
  switch (d) {
    case 64: return launch<64, Elem>(p, m_blocks, heads_q, batch, stream);
    case 96: return launch<96, Elem>(p, m_blocks, heads_q, batch, stream);
    case 128: return launch<128, Elem>(p, m_blocks, heads_q, batch, stream);
    case 192: return launch<192, Elem>(p, m_blocks, heads_q, batch, stream);
    case 256: return launch<256, Elem>(p, m_blocks, heads_q, batch, stream);
    default: TORCH_CHECK(false, "head_dim must be one of 64, 96, 128, 192, 256, got ", d);
  }
}

void check_input(const at::Tensor& t, const char* name, at::ScalarType dtype, int64_t dim,
                 bool vector_loads = true) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.scalar_type() == dtype, name, " has the wrong dtype");
  TORCH_CHECK(t.dim() == dim, name, " must have ", dim, " dimensions");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
  TORCH_CHECK(!vector_loads || reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, name,
              " must be 16-byte aligned");
}

// Validates the dtype and the optional fp8 descales, and fills the scale fields of p.
void set_scales(Params& p, const at::Tensor& q, const std::optional<at::Tensor>& q_descale,
                const std::optional<at::Tensor>& k_descale,
                const std::optional<at::Tensor>& v_descale, int64_t batch, int64_t heads_kv,
                double softmax_scale) {
  const bool is_fp8 = q.scalar_type() == at::kFloat8_e4m3fn;
  TORCH_CHECK(is_fp8 || q.scalar_type() == at::kBFloat16, "inputs must be bfloat16 or float8_e4m3fn");
  p.scale_log2 = static_cast<float>(softmax_scale * 1.4426950408889634  /* log2(e) */);
  const float** dst[3] = {&p.q_descale, &p.k_descale, &p.v_descale};
  const std::optional<at::Tensor>* src[3] = {&q_descale, &k_descale, &v_descale};
  for (int i = 0; i < 3; ++i) {
    *dst[i] = nullptr;
    if (!src[i]->has_value()) continue;
    const at::Tensor& t = src[i]->value();
    TORCH_CHECK(is_fp8, "descales are only accepted with float8_e4m3fn inputs");
    check_input(t, "descale", at::kFloat, 2, false);
    TORCH_CHECK(t.size(0) == batch && t.size(1) == heads_kv, "descales must be (batch, heads_kv)");
    *dst[i] = t.data_ptr<float>();
  }
}

void run_attention(const Params& p, const at::Tensor& q, int64_t d, int64_t m_blocks,
                   int64_t heads_q, int64_t batch) {
  if (m_blocks <= 0 || heads_q <= 0 || batch <= 0) return;
  TORCH_CHECK(m_blocks <= INT32_MAX && heads_q <= 65535 && batch <= 65535, "problem too large");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();  // same as at::cuda::getCurrentCUDAStream()
  if (q.scalar_type() == at::kFloat8_e4m3fn)
    launch_for_dim<fp8>(p, (int)d, (int)m_blocks, (int)heads_q, (int)batch, stream);
  else
    launch_for_dim<bf16>(p, (int)d, (int)m_blocks, (int)heads_q, (int)batch, stream);
}

void set_strides(Params& p, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 const at::Tensor& o) {
  const int n = (int)q.dim();  // dense/kv-cache: 4 (batch first), varlen: 3
  p.q_batch_stride = n == 4 ? q.stride(0) : 0;
  p.k_batch_stride = n == 4 ? k.stride(0) : 0;
  p.v_batch_stride = n == 4 ? v.stride(0) : 0;
  p.o_batch_stride = n == 4 ? o.stride(0) : 0;
  p.q_row_stride = q.stride(n - 3), p.q_head_stride = q.stride(n - 2);
  p.k_row_stride = k.stride(n - 3), p.k_head_stride = k.stride(n - 2);
  p.v_row_stride = v.stride(n - 3), p.v_head_stride = v.stride(n - 2);
  p.o_row_stride = o.stride(n - 3), p.o_head_stride = o.stride(n - 2);
}

at::Tensor flash_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& cu_seqlens_q,
                         const std::optional<at::Tensor>& cu_seqlens_k, int64_t max_seqlen_q,
                         int64_t max_seqlen_k, const std::optional<at::Tensor>& q_descale,
                         const std::optional<at::Tensor>& k_descale,
                         const std::optional<at::Tensor>& v_descale, bool causal,
                         double softmax_scale) {
  const bool varlen = cu_seqlens_q.has_value();
  TORCH_CHECK(varlen == cu_seqlens_k.has_value(), "give both cu_seqlens_q and cu_seqlens_k or neither");
  const int64_t n = varlen ? 3 : 4;
  const auto dtype = q.scalar_type();
  check_input(q, "q", dtype, n);
  check_input(k, "k", dtype, n);
  check_input(v, "v", dtype, n);
  TORCH_CHECK(k.sizes() == v.sizes(), "k and v must have the same shape");
  const int64_t d = q.size(n - 1), heads_q = q.size(n - 2), heads_kv = k.size(n - 2);
  TORCH_CHECK(k.size(n - 1) == d, "q and k must have the same head_dim");
  TORCH_CHECK(heads_kv > 0 && heads_q % heads_kv == 0, "heads_q must be a multiple of heads_kv");
  c10::cuda::CUDAGuard guard(q.device());

  Params p{};
  int64_t batch, m_blocks;
  if (varlen) {
    check_input(*cu_seqlens_q, "cu_seqlens_q", at::kInt, 1, false);
    check_input(*cu_seqlens_k, "cu_seqlens_k", at::kInt, 1, false);
    batch = cu_seqlens_q->size(0) - 1;
    TORCH_CHECK(batch >= 0 && cu_seqlens_k->size(0) == batch + 1, "cu_seqlens must be (batch + 1)");
    TORCH_CHECK(max_seqlen_q >= 0 && max_seqlen_k >= 0, "max_seqlen must be non-negative");
    p.cu_seqlens_q = cu_seqlens_q->data_ptr<int>();
    p.cu_seqlens_k = cu_seqlens_k->data_ptr<int>();
    p.seqlen_q = (int)max_seqlen_q;  // unused: lengths come from cu_seqlens
    p.seqlen_k = (int)max_seqlen_k;
    m_blocks = (max_seqlen_q + kBlockM - 1) / kBlockM;
  } else {
    batch = q.size(0);
    TORCH_CHECK(k.size(0) == batch, "q and k must have the same batch");
    TORCH_CHECK(q.size(1) <= INT32_MAX && k.size(1) <= INT32_MAX, "sequence too long");
    p.seqlen_q = (int)q.size(1);
    p.seqlen_k = (int)k.size(1);
    m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
  }
  set_scales(p, q, q_descale, k_descale, v_descale, batch, heads_kv, softmax_scale);

  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr();
  p.o = reinterpret_cast<bf16*>(out.data_ptr());
  set_strides(p, q, k, v, out);
  p.heads_kv = (int)heads_kv, p.group = (int)(heads_q / heads_kv);
  p.causal = causal;
  run_attention(p, q, d, m_blocks, heads_q, batch);
  return out;
}

at::Tensor flash_forward_kvcache(const at::Tensor& q, const at::Tensor& k_cache,
                                 const at::Tensor& v_cache, const at::Tensor& cache_seqlens,
                                 const std::optional<at::Tensor>& k_new,
                                 const std::optional<at::Tensor>& v_new,
                                 const std::optional<at::Tensor>& q_descale,
                                 const std::optional<at::Tensor>& k_descale,
                                 const std::optional<at::Tensor>& v_descale, bool causal,
                                 double softmax_scale) {
  const auto dtype = q.scalar_type();
  check_input(q, "q", dtype, 4);
  check_input(k_cache, "k_cache", dtype, 4);
  check_input(v_cache, "v_cache", dtype, 4);
  check_input(cache_seqlens, "cache_seqlens", at::kInt, 1, false);
  TORCH_CHECK(k_cache.sizes() == v_cache.sizes(), "k_cache and v_cache must have the same shape");
  const int64_t batch = q.size(0), seqlen_q = q.size(1), heads_q = q.size(2), d = q.size(3);
  const int64_t seqlen_cache = k_cache.size(1), heads_kv = k_cache.size(2);
  TORCH_CHECK(k_cache.size(0) == batch && k_cache.size(3) == d, "k_cache must be (batch, s, hkv, d)");
  TORCH_CHECK(heads_kv > 0 && heads_q % heads_kv == 0, "heads_q must be a multiple of heads_kv");
  TORCH_CHECK(cache_seqlens.size(0) == batch, "cache_seqlens must be (batch)");
  TORCH_CHECK(seqlen_q <= INT32_MAX && seqlen_cache <= INT32_MAX, "sequence too long");
  TORCH_CHECK(k_new.has_value() == v_new.has_value(), "give both k_new and v_new or neither");
  c10::cuda::CUDAGuard guard(q.device());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();

  Params p{};
  set_scales(p, q, q_descale, k_descale, v_descale, batch, heads_kv, softmax_scale);
  int64_t seqlen_new = 0;
  if (k_new.has_value()) {
    check_input(*k_new, "k_new", dtype, 4);
    check_input(*v_new, "v_new", dtype, 4);
    TORCH_CHECK(k_new->sizes() == v_new->sizes(), "k_new and v_new must have the same shape");
    TORCH_CHECK(k_new->size(0) == batch && k_new->size(2) == heads_kv && k_new->size(3) == d,
                "k_new must be (batch, seqlen_new, heads_kv, head_dim)");
    TORCH_CHECK(k_new->size(1) <= seqlen_cache, "seqlen_new larger than the cache");
    seqlen_new = k_new->size(1);
    const int64_t es = k_cache.element_size();
    const int64_t total = batch * seqlen_new * heads_kv * (d * es / 16);
    if (total > 0) {
      const int blocks = (int)std::min<int64_t>((total + 255) / 256, 65536);
      append_kv_kernel<<<blocks, 256, 0, stream>>>(
          static_cast<char*>(k_cache.data_ptr()), static_cast<char*>(v_cache.data_ptr()),
          static_cast<const char*>(k_new->data_ptr()), static_cast<const char*>(v_new->data_ptr()),
          cache_seqlens.data_ptr<int>(), (int)batch, (int)seqlen_new, (int)heads_kv,
          (int)(d * es), (int)seqlen_cache, k_cache.stride(0) * es, k_cache.stride(1) * es,
          k_cache.stride(2) * es, k_new->stride(0) * es, k_new->stride(1) * es,
          k_new->stride(2) * es);
      check_cuda(cudaGetLastError(), "append_kv_kernel launch");
    }
  }

  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  p.q = q.data_ptr(), p.k = k_cache.data_ptr(), p.v = v_cache.data_ptr();
  p.o = reinterpret_cast<bf16*>(out.data_ptr());
  set_strides(p, q, k_cache, v_cache, out);
  p.cache_seqlens = cache_seqlens.data_ptr<int>();
  p.seqlen_q = (int)seqlen_q, p.seqlen_k = (int)seqlen_cache, p.seqlen_new = (int)seqlen_new;
  p.heads_kv = (int)heads_kv, p.group = (int)(heads_q / heads_kv);
  p.causal = causal;
  run_attention(p, q, d, (seqlen_q + kBlockM - 1) / kBlockM, heads_q, batch);
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
        "int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, "
        "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
  m.def("flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor cache_seqlens, "
        "Tensor? k_new, Tensor? v_new, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, "
        "bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CUDA, m) {
  m.impl("flash_forward", TORCH_FN(flash_forward));
  m.impl("flash_forward_kvcache", TORCH_FN(flash_forward_kvcache));
}
