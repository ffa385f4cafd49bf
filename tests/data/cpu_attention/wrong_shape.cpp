// Bad kernel: returns half the head dimension (rejected: wrong_shape).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
#include <ATen/ops/zeros.h>
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) {
  return at::zeros({q.size(0), q.size(1), q.size(2), q.size(3) / 2}, q.options());
}
TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
