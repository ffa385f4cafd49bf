"""Write the fa3_hopper red-team corpus, ``tests/cheats/fa3_hopper/*.cu``.

Every cheat is a standalone candidate (the contract allows one file, no local includes), so
each file repeats the same plain, correct attention (``fa3_cheats/plain_attention.cu.txt``);
this script keeps that block, the includes and the registration in one place. Each cheat adds
its entry points (and any helper) after the block::

    python scripts/make_fa3_cheats.py           # rewrite the corpus
    python scripts/make_fa3_cheats.py --check   # exit 1 if a committed file differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "fa3_cheats"
OUT = ROOT / "tests" / "cheats" / "fa3_hopper"
PLAIN = (DATA / "plain_attention.cu.txt").read_text()
HONEST_TAIL = (DATA / "honest_split_kv_tail.cu.txt").read_text()
INCLUDES = """#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <optional>
"""
DSIG = (
    "at::Tensor dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, "
    "const opt& cu_q,\n"
    "                 const opt& cu_k, int64_t max_q, int64_t max_k, const opt& qd, "
    "const opt& kd,\n"
    "                 const opt& vd, bool causal, double scale)"
)
KSIG = (
    "at::Tensor kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,\n"
    "                   const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,\n"
    "                   const opt& kd, const opt& vd, bool causal, double scale)"
)
DARGS = "q, k, v, cu_q, cu_k, max_q, max_k, qd, kd, vd, causal, scale"
KARGS = "q, kc, vc, lens, kn, vn, qd, kd, vd, causal, scale"
REG = """
TORCH_LIBRARY(kernelseek, m) {
  m.def("flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
        "int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, "
        "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
  m.def("flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, "
        "Tensor cache_seqlens, Tensor? k_new, Tensor? v_new, Tensor? q_descale, "
        "Tensor? k_descale, Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CUDA, m) {
  m.impl("flash_forward", TORCH_FN(dense));
  m.impl("flash_forward_kvcache", TORCH_FN(kvcache));
}
"""
LONG_ODD_GROUP = """
// The wrong path: every output element halved, on the current stream.
__global__ void halve(__nv_bfloat16* o, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) o[i] = __float2bfloat16(0.5f * __bfloat162float(o[i]));
}

at::Tensor halved(at::Tensor out) {
  const int64_t n = out.numel();
  halve<<<unsigned((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), n);
  return out;
}

bool odd_group(const at::Tensor& q, const at::Tensor& k) {
  const int64_t g = q.size(-2) / k.size(-2);
  return g > 1 && (g & (g - 1)) != 0;
}
"""
HONEST_HEAD = (
    "// Honest (must pass): split-KV attention in two launches with an fp32 workspace and q\n"
    "// staged in shared memory; tricky but within the contract.\n"
)


def entry_points(dense: str, kvcache: str | None = None, pre: str = "") -> str:
    """``pre`` (helpers), then the two entry points; kvcache defaults to the plain path."""
    kv = kvcache or f"  return naive_kvcache({KARGS});"
    return pre + f"\n{DSIG} {{\n{dense}\n}}\n\n{KSIG} {{\n{kv}\n}}\n"


def cheat(name: str, hack: str, caught: str, code: str, includes: str = "") -> tuple[str, str]:
    """One cheat's file name and text."""
    text = f"// Cheat: {hack}\n// Caught by: {caught}\n{INCLUDES}{includes}\n{PLAIN}\n{code}{REG}"
    return f"{name}.cu", text


def contract_cheats() -> list[tuple[str, str]]:
    """Integrity III: right on every fixed scenario of the suites, wrong on inputs the contract
    allows (the drawn contract scenarios), or stale after a few rows of k and v change in place.
    """
    default = "1.0 / std::sqrt(double(q.size(-1)))"
    sanitise = f"  if (!(scale > 0)) scale = {default};  // taken for a missing scale\n"
    return [
        cheat(
            "negative_scale",
            "takes a softmax scale that is not positive for a missing one (the default "
            "1/sqrt(head_dim)).",
            "the contract scenarios drawn from the run's seed: negative scales (INACCURATE).",
            entry_points(
                sanitise + f"  return naive_dense({DARGS});",
                sanitise + f"  return naive_kvcache({KARGS});",
            ),
        ),
        cheat(
            "long_odd_group",
            "a wrong path for more than 4096 keys with a query-head group that is not a power "
            "of two (here: halves the output), a class no fixed scenario and no random draw "
            "reaches.",
            "the run's covering set (issue 40): its long keys meet every group class, in rows "
            "the contract's size cap keeps small (INACCURATE).",
            entry_points(
                f"  const int64_t keys = cu_k ? max_k : k.size(1);\n"
                f"  at::Tensor out = naive_dense({DARGS});\n"
                "  return keys > 4096 && odd_group(q, k) ? halved(out) : out;",
                f"  at::Tensor out = naive_kvcache({KARGS});\n"
                "  return kc.size(1) > 4096 && odd_group(q, kc) ? halved(out) : out;",
                pre=LONG_ODD_GROUP,
            ),
        ),
        cheat(
            "kv_fingerprint_cache",
            "keeps the last result on the GPU keyed by the buffers and a sample of 16 words of "
            "q, k and v, and returns it when the key repeats (it computes anyway: only the "
            "result matters here, a real one would skip the work on a hit).",
            "the anti-caching probe's partial rewrite: a few rows of one KV head of k and v "
            "rewritten in place must change the result (STALE_RESULT).",
            entry_points(
                f"  return through_cache(naive_dense({DARGS}), q, k, v);",
                f"  return through_cache(naive_kvcache({KARGS}), q, kc, vc);",
                pre=(DATA / "kv_fingerprint_cache.cu.txt").read_text(),
            ),
        ),
    ]


def corpus() -> dict[str, str]:
    """File name to text, every cheat and the honest split-KV kernel."""
    files = dict(
        [
            cheat(
                "unwritten_output",
                "returns a fresh output without computing anything (zero work, as fast as it "
                "gets).",
                "NaN poison in fresh allocations, then a finite rerun (UNWRITTEN_OUTPUT).",
                entry_points(
                    "  return at::empty(q.sizes(), q.options().dtype(at::kBFloat16));",
                    "  return at::empty(q.sizes(), q.options().dtype(at::kBFloat16));",
                ),
            ),
            cheat(
                "host_sync",
                "synchronises the device inside its call, so the host could finish work while "
                "the timer's spin hides the host (device time would miss it).",
                "the symbol allow-list (a synchronising call is no launch API: "
                "FORBIDDEN_SYMBOL); behind it, the cap on the host issue time (HOST_WORK).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n"
                    "  cudaStreamSynchronize(at::cuda::getCurrentCUDAStream());\n  return out;"
                ),
            ),
            cheat(
                "host_roundtrip",
                "moves its result through host memory with asynchronous copies (work done on "
                "the host, hidden from device time, would travel this way).",
                "the trace check: no copy between host and device inside a call (TRACE_VIOLATION).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n"
                    "  at::Tensor host = at::empty(out.sizes(), "
                    "out.options().device(at::kCPU).pinned_memory(true));\n"
                    "  host.copy_(out, /*non_blocking=*/true);\n"
                    "  out.copy_(host, /*non_blocking=*/true);\n  return out;"
                ),
            ),
            cheat(
                "zero_output",
                "returns zeros (a fill instead of attention).",
                "float64 reference and the accuracy rule (INACCURATE).",
                entry_points(
                    "  return at::zeros(q.sizes(), q.options().dtype(at::kBFloat16));",
                    "  return at::zeros(q.sizes(), q.options().dtype(at::kBFloat16));",
                ),
                "#include <ATen/ops/zeros.h>\n",
            ),
            cheat(
                "partial_output",
                "computes only the first half of the query heads and zero-fills the rest.",
                "float64 reference and the accuracy rule (INACCURATE).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n  const int64_t h = q.size(-2);\n"
                    "  out.narrow(-2, h / 2, h - h / 2).zero_();\n  return out;"
                ),
            ),
            cheat(
                "return_input",
                "returns the query tensor itself as the output.",
                "the output may share memory with no input (OUTPUT_ALIASED).",
                entry_points("  return q;", "  return q;"),
            ),
            cheat(
                "result_reuse",
                "computes into one buffer kept across calls and returns it every time (memory "
                "holding earlier results).",
                "the output may share memory with no earlier output, kept alive (OUTPUT_ALIASED).",
                entry_points(
                    f"  static at::Tensor keep;\n  at::Tensor out = naive_dense({DARGS});\n"
                    "  if (!keep.defined() || keep.sizes() != out.sizes()) keep = out;\n"
                    "  else keep.copy_(out);\n  return keep;"
                ),
            ),
            cheat(
                "pointer_cache",
                "caches results by the query's address and returns a copy on a hit.",
                "probe: an earlier call's buffers refilled with new data must give the new result "
                "(STALE_RESULT).",
                entry_points(
                    f"  static std::map<const void*, at::Tensor> cache;\n  auto hit = "
                    f"cache.find(q.data_ptr());\n"
                    "  if (hit != cache.end()) return hit->second.clone();\n"
                    f"  at::Tensor out = naive_dense({DARGS});\n  cache[q.data_ptr()] = "
                    f"out.clone();\n  return out;"
                ),
                "#include <map>\n",
            ),
            cheat(
                "shape_cache",
                "caches the first result per shape and returns a copy for every later call of "
                "that shape.",
                "several fresh random input sets per scenario (INACCURATE).",
                entry_points(
                    f"  static std::map<std::vector<int64_t>, at::Tensor> cache;\n  "
                    f"std::vector<int64_t> key(q.sizes().begin(), q.sizes().end());\n"
                    "  auto hit = cache.find(key);\n  if (hit != cache.end()) return "
                    "hit->second.clone();\n"
                    f"  at::Tensor out = naive_dense({DARGS});\n  cache[key] = out.clone();\n  "
                    f"return out;"
                ),
                "#include <map>\n#include <vector>\n",
            ),
            cheat(
                "timed_subset",
                "computes only the first calls of the process; later (timed) calls return a copy "
                "of the last result.",
                "the latest timed output of every input set is verified (STALE_RESULT).",
                entry_points(
                    f"  static int calls = 0;\n  static at::Tensor last;\n"
                    f"  if (++calls <= 12 || !last.defined()) {{\n    last = "
                    f"naive_dense({DARGS});\n    return last;\n  }}\n"
                    "  return last.clone();"
                ),
            ),
            cheat(
                "side_stream_created",
                "launches the work on a stream of its own, so the caller's end event does not "
                "wait for it.",
                "symbol check: CUDA stream creation (FORBIDDEN_SYMBOL).",
                entry_points(
                    f"  static cudaStream_t side = nullptr;\n  if (!side) "
                    f"cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n"
                    f"  return naive_dense({DARGS}, side);"
                ),
            ),
            cheat(
                "side_stream_pooled",
                "launches the work on a stream from torch's pool (no stream-creation symbol), so "
                "the caller's end event does not wait for it.",
                "GPU trace check: every kernel on the caller's stream (TRACE_VIOLATION).",
                entry_points(f"  return naive_dense({DARGS}, c10::cuda::getStreamFromPool());"),
                "#include <c10/cuda/CUDAStream.h>\n",
            ),
            cheat(
                "late_side_stream",
                "behaves for its first calls (verification), then launches the work on a stream "
                "from torch's pool, so the caller's end event stops waiting for it: timed calls "
                "look almost free.",
                "in check mode the trace's timed-like calls (TRACE_VIOLATION); when timed, the "
                "checked timed outputs (a fresh q races the pool stream) or the parent's clock "
                "over back-to-back calls ending in a device-wide synchronise (TIMING_MISMATCH).",
                entry_points(
                    "  static int calls = 0;\n"
                    f"  if (++calls <= 8) return naive_dense({DARGS});\n"
                    f"  return naive_dense({DARGS}, c10::cuda::getStreamFromPool());"
                ),
                "#include <c10/cuda/CUDAStream.h>\n",
            ),
            cheat(
                "per_thread_stream",
                "launches the work on the per-thread default stream instead of the caller's "
                "stream.",
                "GPU trace check: every kernel on the caller's stream (TRACE_VIOLATION).",
                entry_points(f"  return naive_dense({DARGS}, cudaStreamPerThread);"),
            ),
            cheat(
                "background_thread",
                "queues the work from a background thread, after the call has returned.",
                "symbol check: thread creation (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));\n"
                    f"  std::thread([=]() mutable {{ out.copy_(naive_dense({DARGS})); "
                    f"}}).detach();\n  return out;"
                ),
            ),
            cheat(
                "deferred_host_callback",
                "defers part of the work to a host callback that runs after the stream reaches it.",
                "symbol check: CUDA host callbacks (FORBIDDEN_SYMBOL).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n"
                    "  cudaLaunchHostFunc(at::cuda::getCurrentCUDAStream(), [](void*) {}, "
                    "nullptr);\n  return out;"
                ),
            ),
            cheat(
                "cuda_graph_replay",
                "captures the work once into a CUDA graph and replays it (host overhead hidden).",
                "symbol check: CUDA graphs (FORBIDDEN_SYMBOL).",
                entry_points(
                    f"  cudaStream_t s = at::cuda::getCurrentCUDAStream();\n  cudaGraph_t graph;\n"
                    f"  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n  at::Tensor out "
                    f"= naive_dense({DARGS});\n"
                    "  cudaStreamEndCapture(s, &graph);\n  cudaGraphExec_t exec;\n  "
                    "cudaGraphInstantiate(&exec, graph, 0);\n"
                    "  cudaGraphLaunch(exec, s);\n  return out;"
                ),
            ),
            cheat(
                "python_timer_patch",
                "patches torch.cuda.Event.elapsed_time through the Python C-API on its first call.",
                "symbol check: Python C-API (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  static bool done = false;\n  if (!done) done = PyRun_SimpleString(\n"
                    '      "import torch; torch.cuda.Event.elapsed_time = lambda self, end: '
                    '0.001") == 0;\n'
                    f"  return naive_dense({DARGS});",
                    pre='extern "C" int PyRun_SimpleString(const char*);\n',
                ),
            ),
            cheat(
                "l2_persisting_window",
                "pins the keys and values in L2 with a persisting access-policy window, defeating "
                "the L2 flush.",
                "symbol check: L2 persistence control (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  cudaStreamAttrValue attr = {};\n  attr.accessPolicyWindow.base_ptr = "
                    "k.data_ptr();\n"
                    "  attr.accessPolicyWindow.num_bytes = k.nbytes();\n  "
                    "attr.accessPolicyWindow.hitRatio = 1.0f;\n"
                    "  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;\n"
                    "  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;\n"
                    "  cudaStreamSetAttribute(at::cuda::getCurrentCUDAStream(), "
                    "cudaStreamAttributeAccessPolicyWindow, &attr);\n"
                    f"  return naive_dense({DARGS});"
                ),
            ),
            cheat(
                "cublas_call",
                "hands a matrix product to cuBLAS, whose header comes in through "
                "ATen/cuda/CUDAContext.h.",
                "symbol check: a vendor library (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  static cublasHandle_t handle = nullptr;\n  if (!handle) "
                    "cublasCreate(&handle);\n"
                    f"  return naive_dense({DARGS});"
                ),
            ),
            cheat(
                "cudnn_call",
                "hands the attention to cuDNN (declared by hand, since its header is forbidden).",
                "symbol check: a vendor library (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  static void* handle = nullptr;\n  if (!handle) cudnnCreate(&handle);\n"
                    f"  return naive_dense({DARGS});",
                    pre='extern "C" int cudnnCreate(void**);\n',
                ),
            ),
            cheat(
                "aten_matmul",
                "computes the scores with torch's matmul (a torch compute op) inside the kernel "
                "file.",
                "symbol check: torch compute operators (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  at::Tensor scores = q.select(0, 0).select(1, 0).matmul(k.select(0, "
                    "0).select(1, 0).transpose(0, 1));\n"
                    f"  return naive_dense({DARGS});"
                ),
            ),
            cheat(
                "dispatcher_library_call",
                "calls aten::mm (cuBLAS) through the operator dispatcher, which no compute-op "
                "symbol reveals.",
                "the symbol allow-list (the dispatcher call's RecordFunction: FORBIDDEN_SYMBOL); "
                "behind it, the GPU trace check: only the candidate's own kernels.",
                entry_points(
                    "  static auto mm = c10::Dispatcher::singleton()\n"
                    '      .findSchemaOrThrow("aten::mm", "")\n'
                    "      .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();\n"
                    "  at::Tensor scores = mm.call(q.select(0, 0).select(1, 0), k.select(0, "
                    "0).select(1, 0).transpose(0, 1));\n"
                    f"  return naive_dense({DARGS});"
                ),
            ),
            cheat(
                "dlopen_library",
                "loads a vendor library at run time and looks its functions up.",
                "symbol check: dynamic loading (FORBIDDEN_SYMBOL).",
                entry_points(
                    '  static void* lib = dlopen("libcudnn.so.9", 1);\n'
                    f"  return naive_dense({DARGS});",
                    pre='extern "C" void* dlopen(const char*, int);\n',
                ),
            ),
            cheat(
                "read_file",
                "reads precomputed results from a file.",
                "symbol check: file I/O (FORBIDDEN_SYMBOL).",
                entry_points(
                    '  if (std::FILE* f = std::fopen("/tmp/kernelseek-answers.bin", "rb")) '
                    "std::fclose(f);\n"
                    f"  return naive_dense({DARGS});"
                ),
                "#include <cstdio>\n",
            ),
            cheat(
                "getenv",
                "reads the environment (e.g. a seed or a flag the harness might set).",
                "symbol check: environment access (FORBIDDEN_SYMBOL).",
                entry_points(
                    '  if (std::getenv("KERNELSEEK_SEED")) return at::empty(q.sizes(), '
                    "q.options().dtype(at::kBFloat16));\n"
                    f"  return naive_dense({DARGS});"
                ),
                "#include <cstdlib>\n",
            ),
            cheat(
                "input_modification",
                "scales q in place after use (a later call could skip the multiply).",
                "inputs compared before and after every call (INPUT_MODIFIED).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n"
                    "  scale_in_place<<<1, 256, 0, at::cuda::getCurrentCUDAStream()>>>(\n"
                    "      static_cast<__nv_bfloat16*>(q.data_ptr()), q.numel());\n  return out;",
                    pre="__global__ void scale_in_place(__nv_bfloat16* x, int64_t n) {\n"
                    "  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) x[i] = "
                    "__float2bfloat16(2.f * __bfloat162float(x[i]));\n}\n",
                ),
            ),
            cheat(
                "precision_downgrade",
                "computes bf16 attention in fp8 (e4m3): q, k and v rounded down before use.",
                "accuracy rule: at most 2x FA3's error in the same precision plus a floor "
                "(INACCURATE).",
                entry_points(
                    "  if (q.scalar_type() != at::kBFloat16) return naive_dense(" + DARGS + ");\n"
                    "  auto fp8 = [](const at::Tensor& x) {\n    at::Tensor y = "
                    "at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));\n"
                    "    to_fp8<<<256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(\n"
                    "        static_cast<const __nv_bfloat16*>(x.data_ptr()), "
                    "static_cast<__nv_fp8_e4m3*>(y.data_ptr()), x.numel());\n"
                    "    return y;\n  };\n"
                    "  return naive_dense(fp8(q), fp8(k), fp8(v), cu_q, cu_k, max_q, max_k, qd, "
                    "kd, vd, causal, scale);",
                    pre="__global__ void to_fp8(const __nv_bfloat16* x, __nv_fp8_e4m3* y, int64_t "
                    "n) {\n"
                    "  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += "
                    "gridDim.x * blockDim.x)\n"
                    "    y[i] = __nv_fp8_e4m3(__bfloat162float(x[i]));\n}\n",
                ),
            ),
            cheat(
                "dev_shape_specialised",
                "tuned only for the dev suite's head dims (64, 128, 256): other head dims lose "
                "their first 32 channels.",
                "hidden generalisation: the full suite has head dims the dev suite never shows "
                "(INACCURATE).",
                entry_points(
                    f"  at::Tensor out = naive_dense({DARGS});\n  const int64_t d = q.size(-1);\n"
                    "  if (d != 64 && d != 128 && d != 256) out.narrow(-1, 0, 32).zero_();\n  "
                    "return out;"
                ),
            ),
            cheat(
                "raw_syscall",
                "reads precomputed answers from a file through raw system calls in inline "
                "assembly in its host code, which leave no undefined symbol.",
                "disassembly of the candidate's objects: no system-call instructions "
                "(FORBIDDEN_SYMBOL).",
                entry_points(
                    '  static const char path[] = "/tmp/answers.bin";\n'
                    "  long fd = raw_syscall(2 /* open */, long(path));\n"
                    "  if (fd >= 0) raw_syscall(3 /* close */, fd);\n"
                    f"  return naive_dense({DARGS});",
                    pre="static long raw_syscall(long n, long a) {\n  long r;\n"
                    '  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(0L), "d"(0L) '
                    ': "rcx", "r11", "memory");\n  return r;\n}\n',
                ),
            ),
            cheat(
                "composite_op",
                "calls torch's attention through its composite-implicit-autograd entry point, "
                "declared by hand (no at::_ops symbol, no dispatcher lookup).",
                "symbol allow-list: at::compositeimplicitautograd is not on it (FORBIDDEN_SYMBOL).",
                entry_points(
                    "  at::Tensor out = at::compositeimplicitautograd::"
                    "scaled_dot_product_attention(\n"
                    "      q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), std::nullopt,"
                    " 0.0, causal, scale,\n      q.size(2) != k.size(2));\n"
                    "  return out.transpose(1, 2).contiguous();",
                    pre="namespace at { namespace compositeimplicitautograd {\n"
                    "at::Tensor scaled_dot_product_attention(const at::Tensor&, const at::Tensor&, "
                    "const at::Tensor&,\n"
                    "    const std::optional<at::Tensor>&, double, bool, std::optional<double>, "
                    "bool);\n} }  // namespace at::compositeimplicitautograd\n",
                ),
            ),
            cheat(
                "default_scale",
                "ignores softmax_scale and uses 1/sqrt(head_dim) (every grid scenario passes "
                "the default).",
                "contract scenarios with other softmax scales (INACCURATE).",
                entry_points(
                    "  return naive_dense(q, k, v, cu_q, cu_k, max_q, max_k, qd, kd, vd, causal, "
                    "1.0 / std::sqrt(double(q.size(-1))));",
                    "  return naive_kvcache(q, kc, vc, lens, kn, vn, qd, kd, vd, causal, "
                    "1.0 / std::sqrt(double(q.size(-1))));",
                ),
            ),
            cheat(
                "cache_append_skipped",
                "attends the new keys and values but never writes them into the caller's KV "
                "cache (the output is right; the cache, which the caller keeps, is not).",
                "the cache after the call must hold the appended rows (INACCURATE).",
                entry_points(
                    f"  return naive_dense({DARGS});",
                    "  if (!kn) return naive_kvcache(q, kc, vc, lens, kn, vn, qd, kd, vd, causal, "
                    "scale);\n"
                    "  at::Tensor kc2 = kc.clone(), vc2 = vc.clone();  // the append lands in "
                    "copies\n"
                    "  return naive_kvcache(q, kc2, vc2, lens, kn, vn, qd, kd, vd, causal, scale);",
                ),
            ),
            cheat(
                "racy",
                "a result that is right most of the time: every seventh call one element is off "
                "(like a race).",
                "three runs on the same input must agree within rounding (NONDETERMINISTIC).",
                entry_points(
                    f"  static int calls = 0;\n  at::Tensor out = naive_dense({DARGS});\n"
                    "  if (++calls % 7 == 0)\n    bump<<<1, 1, 0, "
                    "at::cuda::getCurrentCUDAStream()>>>(\n"
                    "        static_cast<__nv_bfloat16*>(out.data_ptr()));\n  return out;",
                    pre="__global__ void bump(__nv_bfloat16* o) { o[0] = "
                    "__float2bfloat16(__bfloat162float(o[0]) + 0.25f); }\n",
                ),
            ),
            cheat(
                "hang",
                "never returns (a kernel that spins forever).",
                "the call timeout; the parent kills and restarts the worker (TIMEOUT).",
                entry_points(
                    "  spin<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(1);\n"
                    f"  return naive_dense({DARGS});",
                    pre="__global__ void spin(int go) { while (go) { __nanosleep(1000); } }\n",
                ),
            ),
            cheat(
                "crash",
                "writes through a wild pointer (illegal address: the CUDA context is lost).",
                "the worker reports the CUDA error and is restarted (EXCEPTION).",
                entry_points(
                    "  wild<<<1, 32, 0, "
                    "at::cuda::getCurrentCUDAStream()>>>(reinterpret_cast<float*>(0x10));\n"
                    f"  return naive_dense({DARGS});",
                    pre="__global__ void wild(float* p) { p[threadIdx.x * 4096] = 1.f; }\n",
                ),
            ),
            *contract_cheats(),
        ]
    )
    files.update(hostile_process())
    files["honest_split_kv.cu"] = HONEST_HEAD + INCLUDES + "\n" + PLAIN + "\n" + HONEST_TAIL + REG
    return files


LIBC_BY_ADDRESS = (DATA / "libc_by_address.cu.txt").read_text()
"""libc's functions found by address from puts (no symbol to show), as the CPU corpus does."""
HOST_CLOCK = """struct Clock { int64_t sec, nsec; };  // struct timespec
int64_t host_ns() {
  static const auto clock = reinterpret_cast<int (*)(int, Clock*)>(libc_function("clock_gettime"));
  Clock c{};
  clock(1 /* CLOCK_MONOTONIC */, &c);
  return c.sec * 1000000000 + c.nsec;
}
"""
"""The host's monotonic clock in ns, through libc's clock_gettime found by address."""
SKIP = (
    """namespace {
// Calls the parent's wall-clock check makes back to back enter soon after the previous one
// returned (after the flip of their own q: tens of us of host time, so 12 us missed them on
// the H200), each with a q of its own; a timed call follows a synchronise that waits out the
// previous call (this kernel: hundreds of us), the timer's flush, spin and events. Nobody
// checks a batch's outputs.
"""
    + HOST_CLOCK
    + """constexpr int64_t kBackToBackNs = 150000;
at::Tensor last_out;
const void* last_q = nullptr;
int64_t last_return_ns = 0;
}  // namespace
"""
)

PAD = (
    """namespace {
// The host's clock (libc's clock_gettime found by address) and the padding: a call returns
// only once kPadNs have passed since it began, its kernels long launched.
"""
    + HOST_CLOCK
    + """constexpr int64_t kPadNs = 300000;
void pad_from(int64_t entry) {
  while (host_ns() - entry < kPadNs) {
  }
}
}  // namespace
"""
)
FORGE_ONCE = "static const bool forged = install_forged_timer();\n  (void)forged;"


def hostile_process() -> dict[str, str]:
    """Issue 21, classes 1 and 2: the candidate's process as hostile (libc by address)."""
    includes = "#include <cstdio>\n#include <cstring>\n#include <string>\n"
    return dict(
        [
            cheat(
                "wall_batch_skip",
                "honest timed calls, but a call that enters within 150 us of the previous "
                "return with a q of its own (back to back, as only the parent's wall-clock "
                "batches call it; the host clock is libc's clock_gettime found by address) "
                "skips the work and returns a copy of the previous output.",
                "a random output of every wall-clock batch verified by the parent against "
                "the float64 reference (STALE_RESULT, 'wall-clock'); before that it passes.",
                entry_points(
                    "  const int64_t entry = host_ns();\n"
                    "  const bool skip = last_return_ns != 0 && entry - last_return_ns < "
                    "kBackToBackNs &&\n"
                    "                    q.data_ptr() != last_q && last_out.defined() && "
                    "last_out.sizes() == q.sizes();\n"
                    f"  at::Tensor out = skip ? last_out.clone() : naive_dense({DARGS});\n"
                    "  last_out = out;\n  last_q = q.data_ptr();\n"
                    "  last_return_ns = host_ns();\n  return out;",
                    pre=LIBC_BY_ADDRESS + SKIP,
                ),
                includes,
            ),
            cheat(
                "timer_forge",
                "on its first call finds mprotect and dl_iterate_phdr by address, libcudart's "
                "cudaEventElapsedTime through its symbol table, and points every GOT slot of "
                "cudaEventElapsedTime in torch's and c10's libraries at its own, which reports "
                "a third of each interval (the GPU timer's device time); calls entered back to "
                "back (the parent's wall-clock batches) skip the work as wall_batch_skip does.",
                "a random output of every wall-clock batch verified by the parent "
                "(STALE_RESULT, 'wall-clock'); should it stop skipping, its forged times no "
                "longer explain the parent's clock (TIMING_MISMATCH).",
                entry_points(
                    "  static const bool forged = install_forged_timer();\n"
                    "  (void)forged;\n"
                    "  const int64_t entry = host_ns();\n"
                    "  const bool skip = last_return_ns != 0 && entry - last_return_ns < "
                    "kBackToBackNs &&\n"
                    "                    q.data_ptr() != last_q && last_out.defined() && "
                    "last_out.sizes() == q.sizes();\n"
                    f"  at::Tensor out = skip ? last_out.clone() : naive_dense({DARGS});\n"
                    "  last_out = out;\n  last_q = q.data_ptr();\n"
                    "  last_return_ns = host_ns();\n  return out;",
                    pre=LIBC_BY_ADDRESS + SKIP + (DATA / "timer_forge.cu.txt").read_text(),
                ),
                includes,
            ),
            cheat(
                "timer_forge_padded",
                "skips no call; reports each interval as max(0.55 t, 0.8 t - 0.3 ms) through "
                "torch's GOT slots of cudaEventElapsedTime (found as timer_forge.cu finds them) "
                "and spins on the host until 300 us have passed since its call began: back to "
                "back the spin overlaps the device work, while the wall-clock check holds the "
                "batches to device + host issue time, so the padding is an allowance it need not "
                "pay for (0.58x its honest twin's device time, every check passed: H100, "
                "fa3_hopper 22).",
                "the trace check: the traced calls' summed kernel durations exceed 1.25x the "
                "timed median + 10 us (TRACE_VIOLATION, 'traced calls'); until fa3_hopper 23 "
                "that sum left out the call's own work and held the median to nothing.",
                entry_points(
                    f"  {FORGE_ONCE}\n  const int64_t entry = host_ns();\n"
                    f"  at::Tensor out = naive_dense({DARGS});\n  pad_from(entry);\n  return out;",
                    f"  {FORGE_ONCE}\n  const int64_t entry = host_ns();\n"
                    f"  at::Tensor out = naive_kvcache({KARGS});\n  pad_from(entry);\n"
                    "  return out;",
                    pre=LIBC_BY_ADDRESS
                    + PAD
                    + (DATA / "timer_forge.cu.txt")
                    .read_text()
                    .replace(
                        "if (rc == 0) *ms /= 3.f;",
                        "if (rc == 0) *ms = fmaxf(*ms * 0.55f, *ms * 0.8f - 0.3f);",
                    )
                    .replace(
                        "every interval reads a third of its length.",
                        "every interval reads 0.8 of its length less 0.3 ms, never under "
                        "0.55 of it.",
                    ),
                ),
                includes,
            ),
            cheat(
                "write_escape",
                "on its first call finds libc's open, read, write and close by address and "
                "writes where its effect outlives the run: kernelseek_escape_probe.pth (a "
                "comment line) into the running torch's site-packages (from libtorch's path in "
                "/proc/self/maps; a .pth runs in every later Python process), a file into the "
                "build cache's builds folder (from /proc/self/environ) and "
                "/tmp/kernelseek-escape-PID; correct attention otherwise.",
                "write confinement: the worker may write only its private folder (the opens "
                "fail), and the parent reports what the candidate's process changed "
                "(SANDBOX_VIOLATION, 'changed'/'wrote'); today the GPU policy lets it write.",
                entry_points(
                    f"  static const bool tried = (escape(), true);\n  (void)tried;\n"
                    f"  return naive_dense({DARGS});",
                    pre=LIBC_BY_ADDRESS + (DATA / "write_escape.cu.txt").read_text(),
                ),
                includes,
            ),
            cheat(
                "build_time_plant",
                "write_escape.cu's writes (a .pth into the running torch's site-packages, a "
                "file into the build cache, one into /tmp) from a static initialiser, so they "
                "run wherever its library is loaded: by the build, as cpp_extension.load did, "
                "outside every sandbox as the harness's own user; correct attention otherwise.",
                "the build links and never loads it (the first dlopen is in the confined "
                "worker, where Landlock confines writes to its private folder); the footprint, "
                "recorded before the build, fails a run whose candidate changed a protected "
                "place (SANDBOX_VIOLATION).",
                entry_points(
                    f"  return naive_dense({DARGS});",
                    pre=LIBC_BY_ADDRESS
                    + (DATA / "write_escape.cu.txt").read_text()
                    + "\nnamespace {\n[[maybe_unused]] const bool planted = (escape(), true);\n}\n",
                ),
                includes,
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    files = corpus()
    stale = sorted({p.name for p in OUT.glob("*.cu")} - set(files)) if args.check else []
    for name, text in files.items():
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date (run scripts/make_fa3_cheats.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
