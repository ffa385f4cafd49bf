// Not honest (must fail forbidden_symbol): the candidate is linked against the CUDA driver
// library for the TMA encoders, and calls another driver function through it: it loads a
// module and launches with cuLaunchKernel (a launch the trace check would not attribute to one
// of its own __global__ functions). The symbol check allows cuTensorMapEncode* and the error
// strings, no other driver symbol.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <optional>

namespace {

at::Tensor launch_through_the_driver(const at::Tensor& q) {
  c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  CUfunction fn = nullptr;  // found elsewhere: any kernel of any loaded module
  void* args[] = {nullptr};
  CUresult r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0,
                              reinterpret_cast<CUstream>(c10::cuda::getCurrentCUDAStream().stream()),
                              args, nullptr);
  const char* msg = nullptr;
  cuGetErrorString(r, &msg);
  TORCH_CHECK(r == CUDA_SUCCESS, "cuLaunchKernel: ", msg ? msg : "?");
  return out;
}

at::Tensor flash_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& cu_seqlens_q,
                         const std::optional<at::Tensor>& cu_seqlens_k, int64_t max_seqlen_q,
                         int64_t max_seqlen_k, const std::optional<at::Tensor>& q_descale,
                         const std::optional<at::Tensor>& k_descale,
                         const std::optional<at::Tensor>& v_descale, bool causal,
                         double softmax_scale) {
  return launch_through_the_driver(q);
}

at::Tensor flash_forward_kvcache(const at::Tensor& q, const at::Tensor& k_cache,
                                 const at::Tensor& v_cache, const at::Tensor& cache_seqlens,
                                 const std::optional<at::Tensor>& k_new,
                                 const std::optional<at::Tensor>& v_new,
                                 const std::optional<at::Tensor>& q_descale,
                                 const std::optional<at::Tensor>& k_descale,
                                 const std::optional<at::Tensor>& v_descale, bool causal,
                                 double softmax_scale) {
  return launch_through_the_driver(q);
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
