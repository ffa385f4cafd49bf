// The trivial cpu_attention kernel: the contract's registration and an allocation, nothing
// else. Its undefined symbols are what every candidate needs; the symbol check judges only
// what a candidate adds to them (evals/harness/static/symbol_baseline.py).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "expected 4-d q, k and v");
  return at::empty_like(q);
}

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
