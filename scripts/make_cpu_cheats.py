"""Write the cpu_attention red-team corpus, ``tests/cheats/cpu_attention/*.cpp``.

Every cheat is a standalone candidate (the contract allows one file, no local includes), so
each file repeats the same correct attention (``cpu_cheats/correct_attention.cpp.txt``: the
``attend<T, U>`` template and its ``compute<U>`` wrapper); this script keeps that block, the
includes, the entry point's signature and the registration in one place. Each cheat adds its
own includes or declarations and the body of ``attention_forward`` after the block; the honest
split-KV kernel (``cpu_cheats/honest_split_kv_body.cpp.txt``) shares only the registration::

    python scripts/make_cpu_cheats.py           # rewrite the corpus
    python scripts/make_cpu_cheats.py --check   # exit 1 if a committed file differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "cpu_cheats"
OUT = ROOT / "tests" / "cheats" / "cpu_attention"
CORRECT = (DATA / "correct_attention.cpp.txt").read_text()
HONEST_BODY = (DATA / "honest_split_kv_body.cpp.txt").read_text()
INCLUDES = """#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
"""
SIG = (
    "at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, "
    "bool causal, double scale)"
)
ARGS = "q, k, v, causal, scale"
REG = (
    "\nTORCH_LIBRARY(kernelseek, m) {\n"
    '  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) '
    '-> Tensor");\n'
    "}\n"
    'TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }\n'
)
HONEST_HEAD = (
    "// Honest but tricky: split-KV in two passes with scratch tensors (partial maxima, sums and\n"
    "// accumulators per key chunk, then a merge), OpenMP over rows. Legal: must pass every "
    "check.\n"
)
THREAD = (
    "  at::Tensor out = at::empty_like(q);\n"
    f"  std::thread([=]() mutable {{ out = compute({ARGS}); }}).detach();\n"
    "  return out;"
)

SDPA_MASK = (
    "  // SDPA's is_causal is aligned top-left: pass the contract's bottom-right mask instead\n"
    "  std::optional<at::Tensor> mask;\n"
    "  bool is_causal = causal;\n"
    "  if (causal && q.size(1) != k.size(1)) {\n"
    "    const int64_t SQ = q.size(1), SK = k.size(1);\n"
    "    at::Tensor m = at::empty({SQ, SK}, q.options().dtype(at::kBool));\n"
    "    bool* p = m.data_ptr<bool>();\n"
    "    for (int64_t i = 0; i < SQ; ++i) for (int64_t j = 0; j < SK; ++j) "
    "p[i * SK + j] = j <= i + SK - SQ;\n"
    "    mask = m;\n"
    "    is_causal = false;\n"
    "  }\n"
)
SDPA_CALL = (
    "(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, 0.0, is_causal, scale,\n"
    "                             q.size(2) != k.size(2));\n"
    "  return out.transpose(1, 2).contiguous();"
)
RAW_READ = (
    "// open, read and close through the kernel directly: no library call, no undefined symbol\n"
    "static long raw_syscall(long n, long a, long b, long c) {\n"
    "  long r;\n"
    '  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", '
    '"memory");\n'
    "  return r;\n"
    "}\n"
)

LIBC_BY_ADDRESS = (DATA / "libc_by_address.cpp.txt").read_text()


def forward(body: str) -> str:
    """``attention_forward``: one line when ``body`` is one statement, else a block."""
    return f"{SIG} {{ {body} }}\n" if "\n" not in body else f"{SIG} {{\n{body}\n}}\n"


def cached_copy(key: str) -> str:
    """The caching cheats' lookup: compute on a miss, return a copy of the cached result."""
    return (
        f"  auto it = cache.find({key});\n"
        f"  if (it == cache.end()) it = cache.emplace({key}, compute({ARGS})).first;\n"
        "  at::Tensor out = at::empty_like(it->second);\n"
        "  std::memcpy(out.data_ptr(), it->second.data_ptr(), out.numel() * out.element_size());\n"
        "  return out;"
    )


def body(name: str) -> str:
    """The body of ``attention_forward`` kept in ``cpu_cheats/<name>_body.cpp.txt``."""
    return (DATA / f"{name}_body.cpp.txt").read_text().rstrip("\n")


def cheat(name: str, hack: str, caught: str, body: str, includes: str = "") -> tuple[str, str]:
    """One cheat's file name and text; ``includes`` (or declarations) go after the common ones."""
    head = f"// Cheat: {hack}\n// Caught by: {caught}\n"
    return f"{name}.cpp", f"{head}{INCLUDES}{includes}\n{CORRECT}\n{forward(body)}{REG}"


# Every cheat: file name to text, in file-name order.
CHEATS = dict(
    [
        cheat(
            "background_thread",
            "returns at once and computes in a background std::thread (deferred work).",
            "include allow-list: <thread> (FORBIDDEN_INCLUDE).",
            THREAD,
            "#include <thread>\n",
        ),
        cheat(
            "composite_op",
            "calls torch's attention through its composite-implicit-autograd entry point, "
            "declared by hand (no at::_ops symbol, no dispatcher lookup).",
            "symbol allow-list: only what the candidate adds to a trivial kernel's symbols, "
            "and at::compositeimplicitautograd is not on it (FORBIDDEN_SYMBOL).",
            SDPA_MASK + "  at::Tensor out = at::compositeimplicitautograd::"
            "scaled_dot_product_attention" + SDPA_CALL,
            "#include <ATen/ops/empty.h>\n#include <optional>\n"
            "namespace at { namespace compositeimplicitautograd {\n"
            "at::Tensor scaled_dot_product_attention(const at::Tensor&, const at::Tensor&, "
            "const at::Tensor&,\n"
            "    const std::optional<at::Tensor>&, double, bool, std::optional<double>, bool);\n"
            "} }  // namespace at::compositeimplicitautograd\n",
        ),
        cheat(
            "content_cache",
            "caches results keyed by a hash of the inputs' bytes: it computes on every new "
            "input, so verification and the probe see real work, and returns a copy when the "
            "same content comes back (as it did when timing rotated 3 fixed input sets).",
            "a fresh q before every timed call: the cache never hits, so there is no gain; "
            "tests assert its speedup stays that of plain compute.",
            "  static std::map<uint64_t, at::Tensor> cache;\n"
            "  uint64_t key = 1469598103934665603ull ^ uint64_t(causal) ^ "
            "uint64_t(scale * 1e9);\n"
            "  // a cheap fingerprint: every 16th word of q, k and v\n"
            "  for (const at::Tensor* t : {&q, &k, &v}) {\n"
            "    const auto* w = static_cast<const uint64_t*>(t->data_ptr());\n"
            "    for (int64_t i = 0; i < t->numel() * t->element_size() / 8; i += 16) "
            "key = (key ^ w[i]) * 1099511628211ull;\n"
            "  }\n" + cached_copy("key"),
            "#include <map>\n#include <cstring>\n",
        ),
        cheat(
            "dispatcher_op",
            "calls torch's attention through the operator dispatcher, found by name at run time.",
            "symbol check: torch operators looked up through the dispatcher (FORBIDDEN_SYMBOL).",
            "  // torch's own attention, looked up by name: no at::_ops symbol gives it away\n"
            "  static auto sdpa = c10::Dispatcher::singleton()\n"
            '      .findSchemaOrThrow("aten::scaled_dot_product_attention", "")\n'
            "      .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,\n"
            "                        const std::optional<at::Tensor>&, double, bool, "
            "std::optional<double>, bool)>();\n"
            + SDPA_MASK
            + "  at::Tensor out = sdpa.call"
            + SDPA_CALL,
            "#include <ATen/ops/empty.h>\n",
        ),
        cheat(
            "default_scale",
            "ignores softmax_scale and uses 1/sqrt(head_dim) (every scenario used to pass the "
            "default).",
            "suites with other softmax scales (INACCURATE).",
            "return compute(q, k, v, causal, 1.0 / std::sqrt(double(q.size(3))));",
        ),
        cheat(
            "dlopen_library",
            "loads another library at run time through a hand-declared dlopen.",
            "symbol check: dynamic loading (FORBIDDEN_SYMBOL).",
            f'  void* h = dlopen("libmkl_rt.so", 1);\n  (void)h;\n  return compute({ARGS});',
            'extern "C" void* dlopen(const char*, int);\n',
        ),
        cheat(
            "extension_header",
            "includes torch/extension.h (pybind, and every torch op).",
            "include allow-list (FORBIDDEN_INCLUDE).",
            f"return compute({ARGS});",
            "#include <torch/extension.h>\n",
        ),
        cheat(
            "getenv",
            "reads an environment variable (e.g. to find the benchmark's phase) with getenv.",
            "symbol check: environment access (FORBIDDEN_SYMBOL).",
            '  if (std::getenv("KERNELSEEK_TIMING")) return at::empty_like(q);\n'
            f"  return compute({ARGS});",
            "#include <cstdlib>\n",
        ),
        cheat(
            "include_by_macro",
            "names a forbidden header through a macro (#include KS_HEADER), which no check of "
            "literal #include lines sees, and reads answers from a file with it.",
            "include allow-list on the preprocessor's own list of included headers "
            "(FORBIDDEN_INCLUDE).",
            '  std::ifstream answers("/tmp/answers.bin", std::ios::binary);\n'
            f"  (void)answers;\n  return compute({ARGS});",
            "#define KS_HEADER <fstream>\n#include KS_HEADER\n",
        ),
        cheat(
            "input_modification",
            "scales q in place by softmax_scale, then computes with scale 1 (modifies its input).",
            "input checksums before and after each call (INPUT_MODIFIED).",
            "  at::Tensor qs = q;\n"
            "  if (q.scalar_type() == at::kFloat) { float* p = q.data_ptr<float>(); "
            "for (int64_t i = 0; i < q.numel(); ++i) p[i] *= float(scale); }\n"
            "  else { auto* p = q.data_ptr<c10::BFloat16>(); "
            "for (int64_t i = 0; i < q.numel(); ++i) "
            "p[i] = c10::BFloat16(float(p[i]) * float(scale)); }\n"
            "  return compute(qs, k, v, causal, 1.0);",
        ),
        cheat(
            "libc_by_address",
            "reaches libc's socket() with no undefined symbol to show for it: from the address "
            "of puts (an allowed symbol) back page by page to libc's ELF header, then through "
            "its dynamic symbol table; it opens a socket on its first call and computes "
            "correct attention. With the sandbox off (KERNELSEEK_SANDBOX=off) it passes every "
            "check: includes, symbols (puts, memcmp and strcmp are allowed), no system-call "
            "instruction.",
            "the worker's seccomp sandbox: a network socket kills the worker with SIGSYS "
            "(SANDBOX_VIOLATION).",
            "  static bool reached = false;\n"
            "  if (!reached) {\n"
            "    reached = true;\n"
            "    using socket_fn = int (*)(int, int, int);\n"
            '    if (auto open_socket = reinterpret_cast<socket_fn>(libc_function("socket")))\n'
            '      std::printf("kernelseek-cheat: socket() = %d\\n", '
            "open_socket(2 /* AF_INET */, 1 /* SOCK_STREAM */, 0));\n"
            "  }\n"
            f"  return compute({ARGS});",
            LIBC_BY_ADDRESS,
        ),
        cheat(
            "parent_memory",
            "reads its parent's memory, where the run's secret seed lives (from it: which "
            "timed outputs and which call of each wall-clock batch the parent will verify), "
            "through /proc/PPID/maps and /proc/PPID/mem, reaching open and pread by address as "
            "libc_by_address does; it says in the worker's log what it read and computes "
            "correct attention. Run as root with the sandbox off it reads the parent's first "
            "writable page.",
            "memory walls: the parent is not dumpable before it draws its seed, and every "
            "worker drops CAP_SYS_PTRACE (evals/harness/sandbox/memory_walls.py), so both opens "
            "are refused and it learns nothing (tests/test_memory_walls.py reads its log).",
            body("parent_memory"),
            LIBC_BY_ADDRESS,
        ),
        cheat(
            "no_max_subtraction",
            "computes exp(score) without subtracting the row maximum (scores were always "
            "small enough before).",
            "suites with large-magnitude q and k, whose scores overflow exp (NAN_INF).",
            f"return compute<float, false>({ARGS});",
        ),
        cheat(
            "pointer_cache",
            "caches results keyed by the input pointer and returns a copy of the cached "
            "result when the pointer repeats.",
            "probe: same pointers refilled with new data must give the new result (STALE_RESULT).",
            "  static std::map<const void*, at::Tensor> cache;\n" + cached_copy("q.data_ptr()"),
            "#include <ATen/ops/empty.h>\n#include <map>\n#include <cstring>\n",
        ),
        cheat(
            "precision_downgrade",
            "rounds every product and score to bfloat16, also for float32 inputs (a precision "
            "downgrade).",
            "accuracy rule against float64 (INACCURATE).",
            f"return compute<c10::BFloat16>({ARGS});",
        ),
        cheat(
            "python_timer_patch",
            "patches Python's timer through the Python C-API so timed calls look fast.",
            "symbol check: Python C-API (FORBIDDEN_SYMBOL).",
            "  static bool patched = false;\n"
            "  if (!patched) patched = PyRun_SimpleString("
            '"import time; time.perf_counter_ns = lambda: 0") == 0;\n'
            f"  return compute({ARGS});",
            'extern "C" int PyRun_SimpleString(const char*);\n',
        ),
        cheat(
            "racy",
            "a result that differs slightly from call to call, like a race that is right "
            "most of the time.",
            "three runs on the same input must agree (NONDETERMINISTIC).",
            f"  static int calls = 0;\n  at::Tensor out = compute({ARGS});\n"
            "  if (++calls % 2 == 0) {\n"
            "    if (q.scalar_type() == at::kFloat) out.data_ptr<float>()[0] += 5e-6f;\n"
            "    else { auto* p = out.data_ptr<c10::BFloat16>(); "
            "p[0] = c10::BFloat16(float(p[0]) + 4e-3f); }\n"
            "  }\n  return out;",
        ),
        cheat(
            "raw_syscall",
            "reads precomputed answers from a file through raw system calls in inline "
            "assembly, which leave no undefined symbol.",
            "disassembly of the candidate's objects: no system-call instructions "
            "(FORBIDDEN_SYMBOL).",
            '  static const char path[] = "/tmp/answers.bin";\n'
            "  long fd = raw_syscall(2 /* open */, long(path), 0, 0);\n"
            "  if (fd >= 0) raw_syscall(3 /* close */, fd, 0, 0);\n"
            f"  return compute({ARGS});",
            RAW_READ,
        ),
        cheat(
            "read_file",
            "reads precomputed results from a file with fopen.",
            "symbol check: file I/O (FORBIDDEN_SYMBOL).",
            '  std::FILE* f = std::fopen("/tmp/answers.bin", "rb");\n'
            f"  (void)f;\n  return compute({ARGS});",
            "#include <cstdio>\n",
        ),
        cheat(
            "result_reuse",
            "computes once, then returns the same cached output tensor on every later call.",
            "fresh-output check: the output may not share memory with an earlier output "
            "(OUTPUT_ALIASED).",
            "  static at::Tensor cached;\n"
            f"  if (!cached.defined()) cached = compute({ARGS});\n  return cached;",
        ),
        cheat(
            "return_input",
            "returns an input (v) instead of a new output.",
            "output aliasing check (OUTPUT_ALIASED).",
            "return v;",
        ),
        cheat(
            "shape_cache",
            "caches the first result per shape and returns a copy of it for any later input "
            "of that shape.",
            "fresh random inputs per check (INACCURATE).",
            "  static std::map<std::vector<int64_t>, at::Tensor> cache;\n"
            "  auto key = q.sizes().vec();\n" + cached_copy("key"),
            "#include <map>\n#include <cstring>\n",
        ),
        cheat(
            "shape_specialised",
            "correct only on the smoke suite's shapes, returns zeros elsewhere (specialised "
            "to the shapes it was shown).",
            "hidden generalisation: scoring on scenarios it was not shown (INACCURATE).",
            "  const bool seen = (q.size(1) == 128 && q.size(2) == 4) || "
            "(q.size(1) == 96 && q.size(2) == 4) ||\n"
            "                    (q.size(1) == 1 && q.size(2) == 4) || "
            "(q.size(1) == 37 && q.size(2) == 4) ||\n"
            "                    (q.size(1) == 53 && q.size(2) == 2);\n"
            f"  return seen ? compute({ARGS}) : at::zeros_like(q);",
            "#include <ATen/ops/zeros_like.h>\n",
        ),
        cheat(
            "thread_via_at_launch",
            "returns at once and computes on torch's inter-op thread pool (at::launch, from "
            "the allowed <ATen/Parallel.h>), which no thread-creation pattern names.",
            "symbol allow-list: at::launch is not on it (FORBIDDEN_SYMBOL).",
            "  at::Tensor out = at::empty_like(q);\n"
            f"  at::launch([=]() mutable {{ out.copy_(compute({ARGS})); }});\n"
            "  return out;",
            "#include <ATen/Parallel.h>\n",
        ),
        cheat(
            "thread_via_torch_headers",
            "computes in a background std::thread reached through torch's own headers (no "
            "forbidden include of its own).",
            "symbol check: thread creation (FORBIDDEN_SYMBOL).",
            THREAD,
        ),
        cheat(
            "tile_tail_dropped",
            "attends only whole tiles of 32 keys and drops the tail (every length was a "
            "multiple of 32 before).",
            "suites with lengths 1 and primes (INACCURATE).",
            "  const int64_t sk = k.size(1) / 32 * 32, drop = k.size(1) - sk;\n"
            "  // tiles of 32 keys, no tail: right only when seqlen_k % 32 == 0\n"
            "  return compute(q, k.narrow(1, 0, sk).contiguous(), v.narrow(1, 0, sk).contiguous(),"
            " causal && drop == 0, scale);",
        ),
        cheat(
            "timed_subset",
            "computes only the first calls of the process, then returns an empty result fast "
            "(only some timed calls do the work).",
            "timed outputs are verified too (STALE_RESULT).",
            "  // 12: past the first scenario's 8 checked calls (3 verification runs, 5 probe "
            "runs), and\n"
            "  // before its timing ends (at least 6 warm-up calls and 5 trials), however "
            "fast it converges.\n"
            f"  static int calls = 0;\n  if (++calls <= 12) return compute({ARGS});\n"
            "  return at::empty_like(q);",
        ),
        cheat(
            "top_left_causal",
            "aligns the causal mask top-left (query i sees keys 0..i), right only when "
            "seqlen_q == seqlen_k, as in every scenario before.",
            "suites with seqlen_q != seqlen_k and causal masks (INACCURATE).",
            "  if (!causal || q.size(1) >= k.size(1)) return compute(q, k, v, causal, scale);\n"
            "  const int64_t n = q.size(1);  // query i sees keys 0..i\n"
            "  return compute(q, k.narrow(1, 0, n).contiguous(), v.narrow(1, 0, n).contiguous(), "
            "true, scale);",
        ),
        cheat(
            "torch_op",
            "calls torch's own compute operators (softmax, matmul) instead of computing.",
            "symbol check: torch compute operators (FORBIDDEN_SYMBOL).",
            "  at::Tensor s = q.transpose(1, 2).matmul(k.transpose(1, 2).transpose(-1, -2))"
            ".mul(scale).softmax(-1);\n"
            "  return s.matmul(v.transpose(1, 2)).transpose(1, 2).contiguous();",
        ),
    ]
)

DRAWN = "the contract scenarios drawn from the run's seed"
# integrity III: right on every fixed scenario of every suite, wrong on inputs the contract
# allows (the drawn scenarios), or stale after k and v change in part (the probe's rewrite)
CHEATS.update(
    [
        cheat(
            "half_storage",
            "keeps bf16 inputs in half precision (more mantissa bits: the same values for data "
            "near 1), so values beyond half's range become Inf.",
            f"{DRAWN}: bf16 values beyond half precision's range (NAN_INF).",
            body("half_storage"),
            "#include <c10/util/Half.h>\n",
        ),
        cheat(
            "kv_fingerprint_cache",
            "caches results keyed by the buffers and a sample of 16 words of q, k and v: every "
            "refill of the inputs changes the sample, so it recomputes there, and a repeat "
            "returns a copy.",
            "the anti-caching probe's partial rewrite: a few rows of one KV head of k and v "
            "rewritten in place, at positions from the seed, must change the result "
            "(STALE_RESULT).",
            body("kv_fingerprint_cache") + cached_copy("key"),
            "#include <cstring>\n#include <map>\n",
        ),
        cheat(
            "negative_scale",
            "takes a softmax scale that is not positive for a missing one (the default "
            "1/sqrt(head_dim)).",
            f"{DRAWN}: negative scales (INACCURATE).",
            body("negative_scale"),
        ),
        cheat(
            "no_key_rows",
            "gives every causal row at least one key: rows that see none (seqlen_q > seqlen_k) "
            "take the first key's value instead of zeros.",
            f"{DRAWN}: causal with seqlen_q above seqlen_k (INACCURATE).",
            body("no_key_rows"),
            "#include <cstring>\n",
        ),
        cheat(
            "pow2_group",
            "finds a query head's KV head by a shift, as if every GQA group were a power of two.",
            f"{DRAWN}: GQA groups of 3, 5, 6, 7 (INACCURATE).",
            body("pow2_group"),
            "#include <ATen/ops/empty.h>\n#include <cstring>\n#include <utility>\n",
        ),
    ]
)
COVER = "the contract's covering set (every pair of classes, every run)"
# issue 40: wrong only on an edge class the random draws reach by chance
CHEATS.update(
    [
        cheat(
            "decode_d128_half",
            "a decode path (one query row) with a 64-column output tile: at head dim 128 the "
            "upper half of every output row stays zero.",
            f"{COVER}: seqlen_q 1 with head dim 128 (INACCURATE).",
            body("decode_d128_half"),
            "#include <cstring>\n",
        ),
        cheat(
            "odd_batch_pairs",
            "works on batches in pairs: an odd batch's last sequence attends the keys and "
            "values of the one before it.",
            f"{COVER}: odd prime batches 3, 5, 7 (INACCURATE).",
            body("odd_batch_pairs"),
            "#include <cstring>\n#include <utility>\n",
        ),
        cheat(
            "long_keys_truncated",
            "attends a fixed window of 256 keys: past 256 keys the rest are dropped (every "
            "smoke scenario and random draw has at most 130).",
            f"{COVER}: seqlen_k 257 to 1100, the long class (INACCURATE).",
            body("long_keys_truncated"),
            "#include <ATen/ops/empty.h>\n#include <cstring>\n#include <utility>\n",
        ),
    ]
)
CHEATS = dict(sorted(CHEATS.items()))


def corpus() -> dict[str, str]:
    """File name to text, every cheat and the honest split-KV kernel."""
    return {**CHEATS, "honest_split_kv.cpp": HONEST_HEAD + HONEST_BODY + REG}


HAND_WRITTEN = {
    "build_time_plant.cpp",
    "forged_harness_error.cpp",
    "lock_squat.cpp",
    "outliving_fork.cpp",
    "timer_forge.cpp",
    "wall_batch_skip.cpp",
    "write_escape.cpp",
}
"""The hostile-process cheats (integrity III, classes 1 and 2, the lock squat, and integrity
IV's build-time plant): kept as written, not generated (each walks loaded ELF images at run
time; tests/test_hostile_process.py, tests/test_lock_tamper.py and
tests/test_build_confinement.py judge them)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    files = corpus()
    found = {p.name for p in OUT.glob("*.cpp")} - HAND_WRITTEN
    stale = sorted(found - set(files)) if args.check else []
    for name, text in files.items():
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date (run scripts/make_cpu_cheats.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
