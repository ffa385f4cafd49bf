// Bad kernel: writes only the first half of the output (rejected: unwritten_output).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, double scale) {
  at::Tensor out = at::empty_like(q);
  auto flat = out.view({-1});
  flat.narrow(0, 0, flat.numel() / 2).zero_();
  return out;
}
TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
