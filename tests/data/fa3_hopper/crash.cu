// Bad kernel: writes through a wild pointer (rejected: a CUDA error; the worker restarts).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <torch/library.h>
#include <optional>
__global__ void wild(float* p) { p[threadIdx.x * 4096] = 1.f; }
at::Tensor run(const at::Tensor& q) {
  wild<<<1, 32, 0, c10::cuda::getCurrentCUDAStream()>>>(reinterpret_cast<float*>(0x10));
  return at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
}
at::Tensor dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& cuq, const std::optional<at::Tensor>& cuk, int64_t mq, int64_t mk, const std::optional<at::Tensor>& qd, const std::optional<at::Tensor>& kd, const std::optional<at::Tensor>& vd, bool causal, double scale) { return run(q); }
at::Tensor kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc, const at::Tensor& lens, const std::optional<at::Tensor>& kn, const std::optional<at::Tensor>& vn, const std::optional<at::Tensor>& qd, const std::optional<at::Tensor>& kd, const std::optional<at::Tensor>& vd, bool causal, double scale) { return run(q); }
TORCH_LIBRARY(kernelseek, m) {
  m.def("flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
  m.def("flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor cache_seqlens, Tensor? k_new, Tensor? v_new, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CUDA, m) {
  m.impl("flash_forward", TORCH_FN(dense));
  m.impl("flash_forward_kvcache", TORCH_FN(kvcache));
}
