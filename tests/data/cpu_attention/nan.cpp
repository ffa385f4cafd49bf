// Bad kernel: writes NaN everywhere (rejected: nan_inf).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
#include <ATen/ops/full_like.h>
#include <limits>
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) {
  return at::full_like(q, std::numeric_limits<float>::quiet_NaN());
}
TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
