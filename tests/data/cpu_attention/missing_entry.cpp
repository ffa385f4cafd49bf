// Bad kernel: registers the operator under another name (rejected: missing_entry_point).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) { return at::empty_like(q); }
TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_fwd(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_fwd", &attention_forward); }
