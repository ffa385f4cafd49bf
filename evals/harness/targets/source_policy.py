"""What a target's candidates may include and link against: its source policy and the defaults.

Data a target declares (:class:`SourcePolicy`); the static checks
(:mod:`evals.harness.static.static_checks`) enforce it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
