// Bad kernel: the entry point lacks softmax_scale (rejected: wrong_signature).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  return at::empty_like(q);
}
TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
