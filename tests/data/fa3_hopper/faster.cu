// A correct, faster example kernel for the fa3_hopper target (tests use it to see a speedup over
// kernels/fa3_hopper/start.cu). Same contract, same numerics as start.cu; three changes:
//
// 1. Asynchronous, double-buffered K/V tiles. Tiles are copied global -> shared memory with
//    16-byte `cp.async.cg` (zero-filled past the last key), into two buffers: while the warps
//    run the tensor-core work on tile n, the copies of tile n + 1 are in flight. bf16 tiles
//    are used in place. fp8 tiles land raw in a double-buffered staging area and are converted
//    to bf16 (exactly, as in start.cu) shared -> shared once per tile before the matmuls.
//    Long query sequences use CTAs of 8 warps (128 query rows), halving the K/V traffic per row.
// 2. Split-KV (flash-decoding). When the grid would not fill the GPU (decode, speculative
//    decode, short chunks against long caches, few long query tiles), each CTA takes a
//    contiguous range of the key tiles of its (query tile, head, batch), and writes its rows'
//    normalised partial output (fp32) and log2-sum-exp to a workspace from at::empty; a
//    second kernel on the same stream merges the splits into the bf16 output. The number of
//    splits is chosen so that the grid holds about one full wave of resident CTAs.
// 3. GQA packing. When seqlen_q < 64 and several query heads share a KV head, the CTA's rows
//    are (query row, head of the group) pairs, row-major in the query row: all heads that read
//    one KV head are served by one stream of its keys. Warps whose 16 rows are all padding skip
//    the matmuls (they still copy tiles and take part in every barrier).
//
// Unchanged from start.cu: mma.sync m16n8k16 (bf16 in, fp32 accumulate) fed by ldmatrix, 16
// query rows per warp, online softmax in fp32 in base 2 with the scale folded in and the same
// ex2.approx, bottom-right causal masks, rows that see no key give zeros, fp8 descales
// (q and k folded into the score scale, v applied to the output), the KV-cache append kernel.
//
// Contract (kernels/fa3_hopper/CONTRACT.md), registered through TORCH_LIBRARY(kernelseek):
//   flash_forward(q, k, v, cu_seqlens_q?, cu_seqlens_k?, max_seqlen_q, max_seqlen_k,
//                 q_descale?, k_descale?, v_descale?, causal, softmax_scale) -> Tensor
//   flash_forward_kvcache(q, k_cache, v_cache, cache_seqlens, k_new?, v_new?, q_descale?,
//                         k_descale?, v_descale?, causal, softmax_scale) -> Tensor
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace {

using bf16 = __nv_bfloat16;
using fp8 = __nv_fp8_e4m3;

constexpr int kMaxSplits = 128;
constexpr int kPackBelow = 64;  // pack GQA heads into the rows when seqlen_q < this

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
  int pack;                  // query heads per CTA row block: group (packed GQA) or 1
  float scale_log2;          // softmax_scale * log2(e)
  const float* q_descale;    // fp8 only: (batch, heads_kv) contiguous, else nullptr
  const float* k_descale;
  const float* v_descale;
  bool causal;
  // Split-KV: num_splits CTAs per (query tile, head block, batch); when > 1 the CTAs write
  // ws_o (num_splits, out_rows, d) and ws_lse (num_splits, out_rows) instead of o, where
  // out_rows = o.numel() / d and an output row's index is its element offset / d.
  int num_splits;
  int64_t out_rows;
  float* ws_o;
  float* ws_lse;
};

// ---------------------------------------------------------------------------------------------
// Small device helpers: fp8 -> bf16, cp.async, ldmatrix, mma, exp2.

__device__ __forceinline__ uint32_t fp8x2_to_bf16x2(uint32_t two) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  float2 f = __half22float2(__half2(h));  // e4m3 -> f16 -> f32 -> bf16 is exact
  __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<uint32_t*>(&b);
}

__device__ __forceinline__ uint4 fp8x8_to_bf16x8(uint2 raw) {
  return make_uint4(fp8x2_to_bf16x2(raw.x & 0xffffu), fp8x2_to_bf16x2(raw.x >> 16),
                    fp8x2_to_bf16x2(raw.y & 0xffffu), fp8x2_to_bf16x2(raw.y >> 16));
}

__device__ __forceinline__ uint4 load8(const fp8* p) {
  return fp8x8_to_bf16x8(*reinterpret_cast<const uint2*>(p));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; src_bytes 0 reads nothing and writes 16 zero bytes.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)),
               "l"(gmem), "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {  // all but the N most recent groups done
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
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

// ---------------------------------------------------------------------------------------------
// Tile shapes and the shared-memory layout.
//   bf16: sQ (BM x SS) | sK[0], sK[1] (BN x SS each) | sV[0], sV[1]
//   fp8:  sQ | sK | sV (bf16, converted) | raw K[0], K[1] | raw V[0], V[1] (BN x D bytes each)

template <int D, int W, typename Elem>
struct Cfg {
  static constexpr bool kFp8 = std::is_same<Elem, fp8>::value;
  static constexpr int kThreads = 32 * W;
  static constexpr int BM = 16 * W;           // query rows per CTA, 16 per warp
  static constexpr int BN = D > 128 ? 32 : 64;  // keys per tile (as start.cu)
  static constexpr int SS = D + 8;  // smem row stride in elements: rows land on distinct 16-byte
                                    // bank groups, so ldmatrix is conflict-free
  static constexpr int kQElems = BM * SS;
  static constexpr int kKVElems = BN * SS;
  static constexpr int kRawBytes = BN * D;  // one raw fp8 tile
  static constexpr int kSmemBytes =
      kFp8 ? (kQElems + 2 * kKVElems) * 2 + 4 * kRawBytes : (kQElems + 4 * kKVElems) * 2;
  static_assert(D % 16 == 0 && BN % 16 == 0, "tile shapes must be multiples of the mma shape");
  static_assert((SS * 2) % 16 == 0 && kRawBytes % 16 == 0 && (kQElems * 2) % 16 == 0 &&
                    (kKVElems * 2) % 16 == 0,
                "every shared-memory region must stay 16-byte aligned");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA must fit the H100/H200 limit");
};

// Issues cp.async for rows [row0, row0 + ROWS) of a slice whose rows are RB bytes long and
// `stride` bytes apart, into shared memory with row stride SB bytes. Rows at or past `nrows`
// are zero-filled (nothing is read for them), so that masked keys never multiply garbage in
// P V. `g` must be a readable row (used as the address of the zero-fill copies).
template <int ROWS, int RB, int SB, int NT>
__device__ __forceinline__ void cp_async_rows(unsigned char* smem, const unsigned char* g,
                                              int64_t stride, int row0, int nrows, int tid) {
  static_assert(RB % 16 == 0 && SB % 16 == 0, "rows must be whole 16-byte chunks");
  constexpr int kChunks = RB / 16;
  constexpr int kTotal = ROWS * kChunks;
  constexpr int kIters = (kTotal + NT - 1) / NT;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = tid + it * NT;
    if (kTotal % NT == 0 || i < kTotal) {
      const int r = i / kChunks, c = i % kChunks;
      const bool valid = row0 + r < nrows;
      const unsigned char* src = valid ? g + (int64_t)(row0 + r) * stride + c * 16 : g;
      cp_async_16(smem + r * SB + c * 16, src, valid ? 16 : 0);
    }
  }
}

// Converts a raw fp8 tile (ROWS x D bytes, dense) into bf16 rows of stride SS elements.
template <int ROWS, int D, int SS, int NT>
__device__ __forceinline__ void convert_tile(bf16* dst, const unsigned char* raw, int tid) {
  constexpr int kChunks = D / 8;  // 8 fp8 values -> 16 bytes of bf16
  constexpr int kTotal = ROWS * kChunks;
  constexpr int kIters = (kTotal + NT - 1) / NT;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int i = tid + it * NT;
    if (kTotal % NT == 0 || i < kTotal) {
      const int r = i / kChunks, c = i % kChunks;
      const uint2 v = *reinterpret_cast<const uint2*>(raw + r * D + c * 8);
      *reinterpret_cast<uint4*>(dst + r * SS + c * 8) = fp8x8_to_bf16x8(v);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The attention kernel. grid = (ceil(seqlen_q * pack / BM), heads_q / pack, batch * num_splits),
// block = 32 * W. CTA rows are "virtual rows" vr in [0, seqlen_q * pack): query row vr / pack of
// query head blockIdx.y * pack + vr % pack (pack = 1: the plain layout of start.cu).
template <int D, int W, typename Elem>
__global__ void __launch_bounds__(32 * W, W == 4 ? 2 : 1) flash_fwd_kernel(const Params p) {
  using C = Cfg<D, W, Elem>;
  constexpr int BM = C::BM, BN = C::BN, SS = C::SS, NT = C::kThreads;
  constexpr bool kFp8 = C::kFp8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // BM x SS
  bf16* sKV = sQ + C::kQElems;
  unsigned char* sRaw = reinterpret_cast<unsigned char*>(sKV + 2 * C::kKVElems);  // fp8 only

  // Heaviest (last, under causal masking) query tiles are scheduled first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int G = p.pack;
  const int h_base = blockIdx.y * G;  // first query head of this CTA
  const int hk = h_base / p.group;    // the KV head shared by all its rows
  const int b = blockIdx.z / p.num_splits, split = blockIdx.z % p.num_splits;

  // Per-sequence geometry (as start.cu).
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
  sq = max(sq, 0);

  const int sq_v = sq * G;  // virtual rows of this (batch, head block)
  const int m0 = m_block * BM;
  if (m0 >= sq_v) return;  // uniform across the CTA; no row of this CTA exists

  const Elem* gQ = static_cast<const Elem*>(p.q) + q_off;  // rows and heads added per row
  const Elem* gK = static_cast<const Elem*>(p.k) + k_off + hk * p.k_head_stride;
  const Elem* gV = static_cast<const Elem*>(p.v) + v_off + hk * p.v_head_stride;

  float scale_log2 = p.scale_log2, out_scale = 1.f;
  const int ds = b * p.heads_kv + hk;
  if (p.q_descale != nullptr) scale_log2 *= p.q_descale[ds];
  if (p.k_descale != nullptr) scale_log2 *= p.k_descale[ds];
  if (p.v_descale != nullptr) out_scale = p.v_descale[ds];

  // Causal: query i sees key j iff j <= i + diag. Keys past the last row's limit are skipped.
  const int diag = sk - sq;
  const int first_row = m0 / G;                       // smallest query row of this CTA
  const int last_row = (min(m0 + BM, sq_v) - 1) / G;  // largest query row of this CTA
  int n_end = sk;
  if (p.causal) n_end = min(sk, last_row + 1 + diag);
  const int n_blocks = n_end > 0 ? (n_end + BN - 1) / BN : 0;
  int nb_begin = 0, nb_end = n_blocks;
  if (p.num_splits > 1) {  // contiguous ranges of key tiles; trailing splits may be empty
    const int per = (n_blocks + p.num_splits - 1) / p.num_splits;
    nb_begin = min(n_blocks, split * per);
    nb_end = min(n_blocks, nb_begin + per);
  }

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const bool warp_active = m0 + warp * 16 < sq_v;  // some row of this warp is real
  // mma accumulator layout: this thread holds rows (lane/4) and (lane/4 + 8) of the warp's 16,
  // columns 2*(lane%4) + {0,1} of every 8-column block.
  const int vrow_a = m0 + warp * 16 + lane / 4;  // virtual row of elements 0,1; +8 for 2,3
  const int qrow[2] = {vrow_a / G, (vrow_a + 8) / G};  // their query rows (for the mask)

  // Q tile: virtual rows m0 .. m0 + BM, zero past sq_v. bf16 by cp.async (first group), fp8
  // converted through registers.
  {
    constexpr int kChunks = D / 8;  // 8 elements a chunk
    constexpr int kTotal = BM * kChunks;
    static_assert(kTotal % NT == 0, "Q tile must divide evenly among threads");
#pragma unroll 4
    for (int i = tid; i < kTotal; i += NT) {
      const int r = i / kChunks, c = i % kChunks;
      const int vr = m0 + r;
      const bool valid = vr < sq_v;
      const Elem* src = gQ + h_base * p.q_head_stride;  // a readable row for zero-fill
      if (valid)
        src = gQ + (int64_t)(vr / G) * p.q_row_stride + (h_base + vr % G) * p.q_head_stride +
              c * 8;
      if constexpr (kFp8) {
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (valid) val = load8(src);
        *reinterpret_cast<uint4*>(sQ + r * SS + c * 8) = val;
      } else {
        cp_async_16(sQ + r * SS + c * 8, src, valid ? 16 : 0);
      }
    }
  }

  // Issues the copies of key tile nb into buffer buf (bf16: sK/sV[buf]; fp8: raw[buf]).
  auto issue_kv = [&](int nb, int buf) {
    const int n0 = nb * BN;
    constexpr int kRB = D * (int)sizeof(Elem);
    if constexpr (kFp8) {
      unsigned char* rawK = sRaw + buf * C::kRawBytes;
      unsigned char* rawV = sRaw + (2 + buf) * C::kRawBytes;
      cp_async_rows<BN, kRB, kRB, NT>(rawK, reinterpret_cast<const unsigned char*>(gK),
                                      p.k_row_stride * (int64_t)sizeof(Elem), n0, sk, tid);
      cp_async_rows<BN, kRB, kRB, NT>(rawV, reinterpret_cast<const unsigned char*>(gV),
                                      p.v_row_stride * (int64_t)sizeof(Elem), n0, sk, tid);
    } else {
      bf16* dK = sKV + buf * C::kKVElems;
      bf16* dV = sKV + (2 + buf) * C::kKVElems;
      cp_async_rows<BN, kRB, SS * 2, NT>(reinterpret_cast<unsigned char*>(dK),
                                         reinterpret_cast<const unsigned char*>(gK),
                                         p.k_row_stride * (int64_t)sizeof(Elem), n0, sk, tid);
      cp_async_rows<BN, kRB, SS * 2, NT>(reinterpret_cast<unsigned char*>(dV),
                                         reinterpret_cast<const unsigned char*>(gV),
                                         p.v_row_stride * (int64_t)sizeof(Elem), n0, sk, tid);
    }
  };

  if (nb_begin < nb_end) issue_kv(nb_begin, 0);
  cp_async_commit();  // group: Q (bf16) and the first key tile

  float acc[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this thread's partial sums; reduced over the quad at the end

  for (int nb = nb_begin; nb < nb_end; ++nb) {
    const int n0 = nb * BN;
    const int buf = (nb - nb_begin) & 1;
    // (A) Every warp is done with tile nb - 1, so buffer buf ^ 1 (and, for fp8, the converted
    // sK/sV) may be overwritten.
    __syncthreads();
    if (nb + 1 < nb_end) issue_kv(nb + 1, buf ^ 1);
    cp_async_commit();  // possibly empty: keeps "all but the newest group" meaning tile nb
    cp_async_wait<1>();
    __syncthreads();  // (B) tile nb (and Q) copied by every thread, visible to all

    const bf16* cK;
    const bf16* cV;
    if constexpr (kFp8) {
      convert_tile<BN, D, SS, NT>(sKV, sRaw + buf * C::kRawBytes, tid);
      convert_tile<BN, D, SS, NT>(sKV + C::kKVElems, sRaw + (2 + buf) * C::kRawBytes, tid);
      __syncthreads();  // (C) converted tile visible
      cK = sKV;
      cV = sKV + C::kKVElems;
    } else {
      cK = sKV + buf * C::kKVElems;
      cV = sKV + (2 + buf) * C::kKVElems;
    }
    if (!warp_active) continue;  // warp-uniform: only padding rows; barriers are above

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
        ldmatrix_x4(bk, cK + (j * 16 + lane % 8 + (lane / 16) * 8) * SS + kk * 16 +
                            ((lane / 8) % 2) * 8);
        mma_bf16(s[2 * j], a, bk[0], bk[1]);
        mma_bf16(s[2 * j + 1], a, bk[2], bk[3]);
      }
    }

    // Scale into the log2 domain and mask keys past the end and above the causal diagonal.
    const bool need_mask = (n0 + BN > sk) || (p.causal && n0 + BN - 1 > first_row + diag);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * scale_log2;
        if (need_mask) {
          const int col = n0 + j * 8 + (lane % 4) * 2 + (e & 1);
          const int row = qrow[e >= 2 ? 1 : 0];
          if (col >= sk || (p.causal && col > row + diag)) x = -INFINITY;
        }
        s[j][e] = x;
      }
    }

    // Online softmax, one pass per accumulator row half (r = 0: rows vrow_a, r = 1: +8).
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
        ldmatrix_x4_trans(bv, cV + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * SS + j * 16 +
                                  (lane / 16) * 8);
        mma_bf16(acc[2 * j], a, bv[0], bv[1]);
        mma_bf16(acc[2 * j + 1], a, bv[2], bv[3]);
      }
    }
  }

  // Epilogue. No copy may still be writing shared memory (the Q copy when no key tile ran),
  // and every warp must be done reading sQ before it is reused for staging.
  cp_async_wait<0>();
  __syncthreads();
  float inv[2], lsum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    lsum[r] = l;
    inv[r] = l > 0.f ? out_scale / l : 0.f;  // rows that saw no key output zeros
  }
  if (!warp_active) return;  // warp-uniform; no barrier follows

  if (p.num_splits > 1) {
    // Partial result of this split: normalised fp32 output and log2-sum-exp per row (-inf when
    // the row saw no key in this split; its output is then 0).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int vr = vrow_a + r * 8;
      if (vr >= sq_v) continue;
      const int h = h_base + vr % G;
      const int64_t orow =
          (o_off + (int64_t)(vr / G) * p.o_row_stride + (int64_t)h * p.o_head_stride) / D;
      const int64_t slot = (int64_t)split * p.out_rows + orow;
      float* dst = p.ws_o + slot * D;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<float2*>(dst + j * 8 + (lane % 4) * 2) =
            make_float2(acc[j][2 * r] * inv[r], acc[j][2 * r + 1] * inv[r]);
      if (lane % 4 == 0)
        p.ws_lse[slot] = lsum[r] > 0.f ? row_max[r] + log2f(lsum[r]) : -INFINITY;
    }
    return;
  }

  // Stage this warp's 16 rows in its own rows of sQ, store 16 bytes at a time.
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
    const int vr = m0 + warp * 16 + r;
    if (vr < sq_v) {
      const int h = h_base + vr % G;
      bf16* dst = p.o + o_off + (int64_t)(vr / G) * p.o_row_stride +
                  (int64_t)h * p.o_head_stride + c * 8;
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(sO + r * SS + c * 8);
    }
  }
}

// Merges the splits of each output row: o = sum_s w_s o_s / sum_s w_s, w_s = 2^(lse_s - max).
// One warp per output row, 4 columns per lane and step. Rows whose every split saw no key
// (lse all -inf) output zeros.
template <int D>
__global__ void __launch_bounds__(256) combine_kernel(const float* __restrict__ ws_o,
                                                     const float* __restrict__ ws_lse,
                                                     bf16* __restrict__ out, int64_t out_rows,
                                                     int num_splits) {
  static_assert(D % 4 == 0, "4 columns per lane");
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= out_rows) return;
  float mx = -INFINITY;
  for (int s = 0; s < num_splits; ++s) mx = fmaxf(mx, ws_lse[(int64_t)s * out_rows + row]);
  for (int c = lane * 4; c < D; c += 128) {
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    float wsum = 0.f;
    if (mx != -INFINITY) {
      for (int s = 0; s < num_splits; ++s) {
        const int64_t slot = (int64_t)s * out_rows + row;
        const float lse = ws_lse[slot];
        if (lse == -INFINITY) continue;  // this split saw no key for the row
        const float w = exp2f(lse - mx);
        const float4 x = *reinterpret_cast<const float4*>(ws_o + slot * D + c);
        o.x += w * x.x, o.y += w * x.y, o.z += w * x.z, o.w += w * x.w;
        wsum += w;
      }
    }
    const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
    uint2 packed;
    packed.x = pack_bf16(o.x * inv, o.y * inv);
    packed.y = pack_bf16(o.z * inv, o.w * inv);
    *reinterpret_cast<uint2*>(out + row * D + c) = packed;
  }
}

// Appends k_new/v_new (batch, s_new, hkv, d) into the caches at rows cache_seqlens[b] + r,
// 16 bytes per thread-iteration. Rows that would fall outside the cache are skipped.
// (Unchanged from start.cu.)
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

// What the host decides per call: CTA size, GQA packing, split count.
struct Plan {
  int warps;       // 4 (64 rows) or 8 (128 rows)
  int pack;        // 1 or group
  int m_blocks;    // grid.x
  int grid_y;      // heads_q / pack
  int num_splits;  // grid.z = batch * num_splits
};

Plan make_plan(int64_t max_seqlen_q, int64_t max_seqlen_k, int64_t batch, int64_t heads_q,
               int64_t group, int64_t d, int num_sms) {
  Plan pl{};
  pl.pack = (group > 1 && max_seqlen_q < kPackBelow) ? (int)group : 1;
  const int64_t rows = max_seqlen_q * pl.pack;  // virtual rows per (batch, head block)
  TORCH_CHECK(rows <= INT32_MAX / 2, "sequence too long");
  pl.warps = rows >= 256 ? 8 : 4;
  const int64_t bm = 16 * pl.warps;
  const int64_t m_blocks = (rows + bm - 1) / bm;
  TORCH_CHECK(m_blocks <= INT32_MAX, "problem too large");
  pl.m_blocks = (int)m_blocks;
  pl.grid_y = (int)(heads_q / pl.pack);
  // Split the keys when the CTAs would not fill the resident slots of the GPU (2 CTAs of 4
  // warps or 1 of 8 per SM): aim at about two waves, so that unequal sequences (ragged caches,
  // whose lengths the host cannot see without a sync) are cut into pieces the CTA scheduler
  // can balance. Each split keeps at least 4 key tiles of the longest sequence.
  const int64_t base = m_blocks * pl.grid_y * batch;
  const int64_t resident = (int64_t)std::max(num_sms, 1) * (pl.warps == 4 ? 2 : 1);
  const int64_t bn = d > 128 ? 32 : 64;
  const int64_t tiles = (std::max<int64_t>(max_seqlen_k, 0) + bn - 1) / bn;
  int64_t splits = 1;
  if (base > 0 && base < resident)
    splits = std::min<int64_t>((2 * resident + base - 1) / base, tiles / 4);
  splits = std::min<int64_t>(splits, kMaxSplits);
  if (batch > 0) splits = std::min<int64_t>(splits, 65535 / batch);
  pl.num_splits = (int)std::max<int64_t>(splits, 1);
  return pl;
}

template <int D, int W, typename Elem>
void launch(const Params& p, const Plan& pl, int batch, cudaStream_t stream) {
  using C = Cfg<D, W, Elem>;
  constexpr int smem = C::kSmemBytes;
  auto kernel = flash_fwd_kernel<D, W, Elem>;
  if (smem > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute");
  kernel<<<dim3(pl.m_blocks, pl.grid_y, batch * pl.num_splits), C::kThreads, smem, stream>>>(p);
  check_cuda(cudaGetLastError(), "flash_fwd_kernel launch");
  if (pl.num_splits > 1) {
    constexpr int kRowsPerBlock = 256 / 32;
    const int64_t blocks = (p.out_rows + kRowsPerBlock - 1) / kRowsPerBlock;
    TORCH_CHECK(blocks <= INT32_MAX, "problem too large");
    combine_kernel<D><<<(unsigned)blocks, 256, 0, stream>>>(p.ws_o, p.ws_lse, p.o, p.out_rows,
                                                           pl.num_splits);
    check_cuda(cudaGetLastError(), "combine_kernel launch");
  }
}

template <int D, typename Elem>
void launch_for_warps(const Params& p, const Plan& pl, int batch, cudaStream_t stream) {
  if (pl.warps == 8) return launch<D, 8, Elem>(p, pl, batch, stream);
  return launch<D, 4, Elem>(p, pl, batch, stream);
}

template <typename Elem>
void launch_for_dim(const Params& p, const Plan& pl, int d, int batch, cudaStream_t stream) {
  switch (d) {
    case 64: return launch_for_warps<64, Elem>(p, pl, batch, stream);
    case 96: return launch_for_warps<96, Elem>(p, pl, batch, stream);
    case 128: return launch_for_warps<128, Elem>(p, pl, batch, stream);
    case 192: return launch_for_warps<192, Elem>(p, pl, batch, stream);
    case 256: return launch_for_warps<256, Elem>(p, pl, batch, stream);
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

// Plans the launch, allocates the split workspace if any, and launches on the current stream.
// p.o must be the fresh contiguous output; q's dtype picks the kernel.
void run_attention(Params& p, const at::Tensor& q, const at::Tensor& out, int64_t d,
                   int64_t max_seqlen_q, int64_t max_seqlen_k, int64_t heads_q, int64_t batch) {
  if (max_seqlen_q <= 0 || heads_q <= 0 || batch <= 0 || out.numel() == 0) return;
  TORCH_CHECK(heads_q <= 65535 && batch <= 65535, "problem too large");
  TORCH_CHECK(out.is_contiguous(), "output must be contiguous");
  int device = 0, num_sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute");
  const Plan pl = make_plan(max_seqlen_q, max_seqlen_k, batch, heads_q, p.group, d, num_sms);
  TORCH_CHECK(heads_q % pl.pack == 0, "internal: pack must divide heads_q");
  p.pack = pl.pack;
  p.num_splits = pl.num_splits;
  p.out_rows = out.numel() / d;
  p.ws_o = nullptr;
  p.ws_lse = nullptr;
  at::Tensor ws;
  if (pl.num_splits > 1) {
    ws = at::empty({(int64_t)pl.num_splits * p.out_rows * (d + 1)},
                   q.options().dtype(at::kFloat));
    p.ws_o = ws.data_ptr<float>();
    p.ws_lse = p.ws_o + (int64_t)pl.num_splits * p.out_rows * d;
  }
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();  // = at::cuda::getCurrentCUDAStream()
  if (q.scalar_type() == at::kFloat8_e4m3fn)
    launch_for_dim<fp8>(p, pl, (int)d, (int)batch, stream);
  else
    launch_for_dim<bf16>(p, pl, (int)d, (int)batch, stream);
  // ws is released here; the caching allocator keeps it for the stream, whose order makes
  // any later reuse wait for the kernels above.
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
  int64_t batch, sq_max, sk_max;
  if (varlen) {
    check_input(*cu_seqlens_q, "cu_seqlens_q", at::kInt, 1, false);
    check_input(*cu_seqlens_k, "cu_seqlens_k", at::kInt, 1, false);
    batch = cu_seqlens_q->size(0) - 1;
    TORCH_CHECK(batch >= 0 && cu_seqlens_k->size(0) == batch + 1, "cu_seqlens must be (batch + 1)");
    TORCH_CHECK(max_seqlen_q >= 0 && max_seqlen_k >= 0, "max_seqlen must be non-negative");
    TORCH_CHECK(max_seqlen_q <= INT32_MAX && max_seqlen_k <= INT32_MAX, "sequence too long");
    p.cu_seqlens_q = cu_seqlens_q->data_ptr<int>();
    p.cu_seqlens_k = cu_seqlens_k->data_ptr<int>();
    p.seqlen_q = (int)max_seqlen_q;  // unused: lengths come from cu_seqlens
    p.seqlen_k = (int)max_seqlen_k;
    sq_max = max_seqlen_q;
    sk_max = max_seqlen_k;
  } else {
    batch = q.size(0);
    TORCH_CHECK(k.size(0) == batch, "q and k must have the same batch");
    TORCH_CHECK(q.size(1) <= INT32_MAX && k.size(1) <= INT32_MAX, "sequence too long");
    p.seqlen_q = (int)q.size(1);
    p.seqlen_k = (int)k.size(1);
    sq_max = p.seqlen_q;
    sk_max = p.seqlen_k;
  }
  set_scales(p, q, q_descale, k_descale, v_descale, batch, heads_kv, softmax_scale);

  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr();
  p.o = reinterpret_cast<bf16*>(out.data_ptr());
  set_strides(p, q, k, v, out);
  p.heads_kv = (int)heads_kv, p.group = (int)(heads_q / heads_kv);
  p.causal = causal;
  run_attention(p, q, out, d, sq_max, sk_max, heads_q, batch);
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
  run_attention(p, q, out, d, seqlen_q, seqlen_cache, heads_q, batch);
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
