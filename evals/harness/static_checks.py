"""Static checks of a candidate: includes, linked symbols and torch operators.

Includes are checked against an allow-list; the undefined symbols of the candidate's compiled
objects against forbidden patterns (Python C-API, dynamic loading, file, socket and environment
access, process and thread creation, CUDA streams and graphs, L2 persistence, vendor
libraries); its torch operators against the allocation-only allow-list.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from evals.harness.failures import Code, Failure

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
    r"|type_traits|utility|vector|math\.h|stdint\.h|stddef\.h|float\.h|assert\.h"
)
ALLOC_HEADERS = r"ATen/ops/(empty|empty_like|empty_strided|zeros|zeros_like|full|full_like)\.h"
TORCH_HEADERS = (
    r"torch/library\.h",
    r"ATen/core/Tensor\.h",
    ALLOC_HEADERS,
    r"c10/util/[A-Za-z0-9_]+\.h",
    r"c10/core/ScalarType\.h",
)


@dataclass(frozen=True)
class SourcePolicy:
    """What a target's candidates may include and link against.

    Attributes:
        allowed_includes: Regexes; every ``#include`` must match one.
        forbidden_symbols: (regex, description) applied to demangled undefined symbols.
        allowed_torch_ops: ``at::_ops`` operator names the candidate may call.
        check_symbols: Whether to check the undefined symbols of the candidate's objects.
    """

    allowed_includes: tuple[str, ...]
    forbidden_symbols: tuple[tuple[str, str], ...] = COMMON_FORBIDDEN_SYMBOLS
    allowed_torch_ops: frozenset[str] = ALLOCATION_OPS
    check_symbols: bool = True


def check_includes(source: str, policy: SourcePolicy) -> Failure | None:
    """The first include that no pattern of the policy allows, as a failure."""
    allowed = [re.compile(p) for p in policy.allowed_includes]
    for header in _INCLUDE.findall(source):
        if not any(p.fullmatch(header) for p in allowed):
            reason = f"forbidden include <{header}> (see the contract's allowed headers)"
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


def check_symbols(library: Path, policy: SourcePolicy) -> tuple[Failure | None, str]:
    """Forbidden symbols or torch compute operators referenced by the candidate's objects.

    Returns:
        The first violation (or None) and a one-line finding for the verdict.
    """
    binaries = candidate_objects(library) or [library]
    try:
        symbols = sorted({s for b in binaries for s in undefined_symbols(b)})
    except (OSError, subprocess.SubprocessError) as exc:
        reason = f"cannot list the candidate's symbols: {exc}"
        return Failure(Code.FORBIDDEN_SYMBOL, reason), "failed"
    rules = [(re.compile(p), what) for p, what in policy.forbidden_symbols]
    for sym in symbols:
        for rule, what in rules:
            if rule.search(sym):
                return Failure(Code.FORBIDDEN_SYMBOL, f"uses {what}: {sym}"), "failed"
        for op in _ATEN_OP.findall(sym):
            if not allowed_op(op, policy.allowed_torch_ops):
                reason = f"calls the torch compute operator {op}"
                return Failure(Code.FORBIDDEN_SYMBOL, reason), "failed"
    names = ", ".join(b.name for b in binaries)
    return None, f"passed: {len(symbols)} undefined symbols of {names} checked"
