"""Static checks of a candidate: includes, linked symbols, torch operators, system calls.

Before the build, the source's literal includes are checked against an allow-list. After it,
the candidate's objects are judged: the headers its compile command really includes (the
preprocessor's own list, :mod:`evals.harness.static.include_scan`) against the same allow-list; its
undefined symbols against forbidden patterns (Python C-API, dynamic loading, file, socket and
environment access, process and thread creation, CUDA streams and graphs, L2 persistence,
vendor libraries) and its torch operators against the allocation-only allow-list; its
disassembly for raw system-call instructions; and every symbol it adds to a trivial kernel's
(:mod:`evals.harness.static.symbol_baseline`) against the target's symbol allow-list
(:mod:`evals.harness.static.symbol_rules`).
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from evals.harness.building.cache_dir import default_cache_dir
from evals.harness.building.compile_command import read_compile_command
from evals.harness.static import include_scan, symbol_baseline, syscalls
from evals.harness.static.symbol_rules import first_unallowed
from evals.harness.verdict.failures import Code, Failure

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_ATEN_OP = re.compile(r"\bat::_ops::([A-Za-z0-9_]+)::")

COMMON_FORBIDDEN_SYMBOLS: tuple[tuple[str, str], ...] = (
    (r"^_?Py[A-Z_]|^_Py", "the Python C-API"),
    (r"^(dlopen|dlsym|dlmopen|dlvsym)\b", "dynamic loading"),
    (r"^(fopen|fopen64|freopen|open|open64|openat|creat|fdopen|opendir)\b", "file I/O"),
    (r"^std::(__cxx11::)?basic_(i|o)?fstream|^std::basic_filebuf", "file I/O"),
    (r"^(socket|connect|bind|listen|accept|getaddrinfo)\b", "socket I/O"),
    (r"^(getenv|secure_getenv|setenv|putenv|unsetenv)\b", "environment access"),
    (
        r"^(fork|vfork|execv|execve|execvp|execl|execlp|system|popen|posix_spawn|clone)\b",
        "process creation",
    ),
    (r"^(pthread_create|thrd_create)\b|std::thread", "thread creation"),
    (r"^(signal|sigaction|ptrace|mprotect|syscall)\b", "signal or syscall tricks"),
    (
        r"^cuda(StreamCreate|StreamCreateWithFlags|StreamCreateWithPriority|Graph|StreamBeginCapture"
        r"|StreamSetAttribute|CtxResetPersistingL2Cache|DeviceSetLimit|LaunchHostFunc"
        r"|StreamAddCallback)",
        "CUDA stream, graph or L2-persistence control",
    ),
    (
        r"^cu(StreamCreate|Graph|StreamSetAttribute|CtxResetPersistingL2Cache|ModuleLoad"
        r"|LibraryLoad)",
        "CUDA driver stream, graph, L2 or module control",
    ),
    (r"^(cublas|cublasLt|cudnn|cblas_|dnnl_|mkl_|flash::|cutlass::)", "a vendor library"),
)
"""(pattern on the demangled undefined symbol, what it is)."""

DISPATCHER_SYMBOLS: tuple[tuple[str, str], ...] = (
    (
        r"^c10::Dispatcher::(findSchema|findSchemaOrThrow|findOp)\b",
        "torch operators looked up through the dispatcher",
    ),
)
"""For targets without a GPU trace check: torch ops reached through the dispatcher (which no
``at::_ops`` symbol reveals). On GPU targets the trace check catches their kernels instead."""

ALLOCATION_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "full",
        "full_like",
        "fill",
        "zero",
        "view",
        "reshape",
        "contiguous",
        "narrow",
        "slice",
        "select",
        "as_strided",
        "expand",
        "permute",
        "transpose",
        "unsqueeze",
        "squeeze",
        "flatten",
        "size",
        "stride",
        "copy",
        "clone",
    }
)
"""torch operators a candidate may call: allocation, fills, copies and views, no computation.
An ``at::_ops`` name matches a base name exactly or with an overload suffix (``empty_memory_format``
is ``empty``; ``fill_`` is ``fill``)."""


def allowed_op(op: str, allowed: frozenset[str]) -> bool:
    """Whether the ``at::_ops`` struct name ``op`` is an allowed base name or an overload of one."""
    return op.rstrip("_") in allowed or any(op.startswith(base + "_") for base in allowed)


STD_HEADERS = (
    r"algorithm|array|atomic|bit|cassert|cfloat|climits|cmath|cstddef|cstdint|cstdio|cstdlib"
    r"|cstring|functional|initializer_list|limits|memory|numeric|optional|string|tuple"
    r"|map|unordered_map|set|unordered_set|deque|list|stdexcept|iostream|sstream|complex"
    r"|type_traits|utility|vector|iterator|queue|stack|bitset|variant|any|string_view|span"
    r"|numbers|cinttypes|cstdarg|cctype|cerrno|cfenv|ctime|chrono|new|exception|typeinfo"
    r"|typeindex|system_error|charconv|iomanip|ios|iosfwd|ostream|istream|streambuf|valarray"
    r"|ratio|compare|concepts|ranges|random|mutex|version"
    r"|(math|stdint|stddef|float|assert|stdlib|string|limits|stdio|inttypes|stdarg|stdbool"
    r"|ctype|errno)\.h"
)
"""The C++ standard library's headers a kernel may name; not those for threads, files, signals
or processes (``thread``, ``future``, ``condition_variable``, ``fstream``, ``filesystem``,
``csignal``, ``execution``): what the others declare is judged by the symbol check."""
ALLOC_HEADERS = r"ATen/ops/(empty|empty_like|empty_strided|zeros|zeros_like|full|full_like)\.h"
TORCH_HEADERS = (
    r"torch/library\.h",
    r"ATen/core/Tensor\.h",
    r"ATen/(core/)?TensorAccessor\.h",
    r"ATen/Dispatch\.h",
    ALLOC_HEADERS,
    r"c10/util/[A-Za-z0-9_]+\.h",
    r"c10/(core|macros)/[A-Za-z0-9_]+\.h",
)


@dataclass(frozen=True)
class SourcePolicy:
    """What a target's candidates may include and link against.

    Attributes:
        allowed_includes: Regexes; every ``#include`` must match one.
        forbidden_symbols: (regex, description) applied to demangled undefined symbols.
        allowed_torch_ops: ``at::_ops`` operator names the candidate may call.
        check_symbols: Whether to check the undefined symbols of the candidate's objects.
        trivial_kernel: The target's trivial kernel (its undefined symbols are allowed), or None
            to skip the checks that rerun the compile command (preprocessor includes, symbols
            added to the trivial kernel's); the system-call scan runs either way.
        allowed_symbols: Regexes on the qualified names of symbols a candidate may add to the
            trivial kernel's (:mod:`evals.harness.static.symbol_rules`).
    """

    allowed_includes: tuple[str, ...]
    forbidden_symbols: tuple[tuple[str, str], ...] = COMMON_FORBIDDEN_SYMBOLS
    allowed_torch_ops: frozenset[str] = ALLOCATION_OPS
    check_symbols: bool = True
    trivial_kernel: Path | None = None
    allowed_symbols: tuple[str, ...] = ()


def check_includes(source: str, policy: SourcePolicy) -> Failure | None:
    """The first literal include that no pattern of the policy allows, as a failure."""
    return _first_forbidden_header(_INCLUDE.findall(source), policy, "")


def _first_forbidden_header(headers: list[str], policy: SourcePolicy, how: str) -> Failure | None:
    allowed = [re.compile(p) for p in policy.allowed_includes]
    for header in headers:
        if not any(p.fullmatch(header) for p in allowed):
            reason = f"forbidden include <{header}>{how} (see the contract's allowed headers)"
            return Failure(Code.FORBIDDEN_INCLUDE, reason)
    return None


def candidate_objects(library: Path) -> list[Path]:
    """The object files compiled from the candidate's source, beside its library.

    These hold the candidate's own references only; the linked library also carries pieces of
    static runtime libraries (libstdc++, cudart) that the harness's fixed flags link in, and
    that legitimately open files or read the environment.
    """
    return sorted(library.parent.glob("*.o"))


def undefined_symbols(binary: Path) -> list[str]:
    """Demangled undefined symbols of an object file (or, for a library, its dynamic ones)."""
    dynamic = ["-D"] if binary.suffix == ".so" else []
    out = subprocess.run(
        ["nm", *dynamic, "-C", "--undefined-only", str(binary)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    symbols = []
    for line in out.splitlines():
        name = line.strip()
        if name.startswith("U "):
            name = name[2:].strip()
        symbols.append(name.split("@")[0])
    return symbols


def check_symbols(
    library: Path, policy: SourcePolicy, *, baseline_root: Path | None = None
) -> tuple[Failure | None, str]:
    """Everything judged on the candidate's build: includes, symbols, operators, system calls.

    ``baseline_root``: the cache holding the trivial kernel's symbol baseline (default: the
    shared build cache; ``score`` gives its private one, which nothing else has written).

    Returns:
        The first violation (or None) and a one-line finding for the verdict.
    """
    binaries = candidate_objects(library) or [library]
    try:
        symbols = sorted({s for b in binaries for s in undefined_symbols(b)})
        # three independent tool runs (preprocessor, disassembler, the trivial kernel's
        # compile the first time): side by side, each result awaited before it is judged
        with ThreadPoolExecutor(max_workers=3) as pool:
            headers_job = pool.submit(_preprocessed_headers, library, policy)
            raw_job = pool.submit(_syscall_instructions, binaries)
            root = baseline_root or default_cache_dir()
            added_job = pool.submit(_added_symbols, library, policy, symbols, root)
            headers, raw, added = headers_job.result(), raw_job.result(), added_job.result()
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        reason = f"cannot check the candidate's build: {exc}"
        return Failure(Code.FORBIDDEN_SYMBOL, reason), "failed"
    failure = (
        _first_forbidden_header(headers or [], policy, " (the preprocessor's list)")
        or _denied_symbol(symbols, policy)
        or _raw_syscall(raw)
        or _unallowed_symbol(added, policy)
    )
    if failure is not None:
        return failure, "failed"
    names = ", ".join(b.name for b in binaries)
    finding = f"passed: {len(symbols)} undefined symbols of {names} checked"
    if added is not None:
        finding += f", {len(added)} beyond the trivial kernel's, all allowed"
    if headers is not None:
        finding += f"; {len(headers)} headers included (preprocessor), all allowed"
    return None, finding + "; no system-call instructions"


def _syscall_instructions(binaries: list[Path]) -> list[str]:
    """Every system-call instruction in ``binaries``, as ``object: instruction``."""
    return [f"{b.name}: {ins}" for b in binaries for ins in syscalls.syscall_instructions(b)]


def _preprocessed_headers(library: Path, policy: SourcePolicy) -> list[str] | None:
    """The candidate's direct includes as its preprocessor saw them, or None when not checked."""
    if policy.trivial_kernel is None:
        return None
    cmd = read_compile_command(library.parent)
    if cmd is None:
        raise RuntimeError(f"no compile command in {library.parent / 'build.ninja'}")
    return include_scan.included_headers(cmd)


def _added_symbols(
    library: Path, policy: SourcePolicy, symbols: list[str], root: Path
) -> list[str] | None:
    """The candidate's undefined symbols that the trivial kernel's build lacks, or None.

    The baseline comes from ``root``'s records (made there when missing).
    """
    if policy.trivial_kernel is None:
        return None
    cmd = read_compile_command(library.parent)
    if cmd is None:
        raise RuntimeError(f"no compile command in {library.parent / 'build.ninja'}")
    base = symbol_baseline.baseline_symbols(cmd, policy.trivial_kernel, root, undefined_symbols)
    return [s for s in symbols if s not in base]


def _denied_symbol(symbols: list[str], policy: SourcePolicy) -> Failure | None:
    rules = [(re.compile(p), what) for p, what in policy.forbidden_symbols]
    for sym in symbols:
        for rule, what in rules:
            if rule.search(sym):
                return Failure(Code.FORBIDDEN_SYMBOL, f"uses {what}: {sym}")
        for op in _ATEN_OP.findall(sym):
            if not allowed_op(op, policy.allowed_torch_ops):
                return Failure(Code.FORBIDDEN_SYMBOL, f"calls the torch compute operator {op}")
    return None


def _raw_syscall(found: list[str]) -> Failure | None:
    if not found:
        return None
    reason = f"makes raw system calls (inline assembly): {found[0]}"
    return Failure(Code.FORBIDDEN_SYMBOL, reason)


def _unallowed_symbol(added: list[str] | None, policy: SourcePolicy) -> Failure | None:
    if added is None:
        return None
    sym = first_unallowed(added, policy.allowed_symbols)
    if sym is None:
        return None
    reason = f"uses a symbol outside the target's allow-list: {sym}"
    return Failure(Code.FORBIDDEN_SYMBOL, reason)
