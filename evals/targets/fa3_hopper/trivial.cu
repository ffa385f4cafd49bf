// The trivial kernel of fa3_hopper (and fa4_blackwell, whose trivial.cu links here): the
// contract's registration, an allocation and one kernel launch on the caller's stream, nothing
// else. Its undefined symbols are what every candidate needs; the symbol check judges only what
// a candidate adds (evals/harness/static/symbol_baseline.py).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <optional>

__global__ void zero_kernel(__nv_bfloat16* out, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(0.f);
}

static at::Tensor zeros_like_q(const at::Tensor& q) {
  TORCH_CHECK(q.is_cuda(), "q must be a CUDA tensor");
  c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  int64_t n = out.numel();
  zero_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), n);
  cudaError_t e = cudaGetLastError();
  TORCH_CHECK(e == cudaSuccess, "launch: ", cudaGetErrorString(e));
  return out;
}

at::Tensor flash_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& cu_seqlens_q,
                         const std::optional<at::Tensor>& cu_seqlens_k, int64_t max_seqlen_q,
                         int64_t max_seqlen_k, const std::optional<at::Tensor>& q_descale,
                         const std::optional<at::Tensor>& k_descale,
                         const std::optional<at::Tensor>& v_descale, bool causal,
                         double softmax_scale) {
  return zeros_like_q(q);
}

at::Tensor flash_forward_kvcache(const at::Tensor& q, const at::Tensor& k_cache,
                                 const at::Tensor& v_cache, const at::Tensor& cache_seqlens,
                                 const std::optional<at::Tensor>& k_new,
                                 const std::optional<at::Tensor>& v_new,
                                 const std::optional<at::Tensor>& q_descale,
                                 const std::optional<at::Tensor>& k_descale,
                                 const std::optional<at::Tensor>& v_descale, bool causal,
                                 double softmax_scale) {
  return zeros_like_q(q);
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
  m.impl("flash_forward", TORCH_FN(flash_forward));
  m.impl("flash_forward_kvcache", TORCH_FN(flash_forward_kvcache));
}
