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
from pathlib import Path

from evals.harness.building.cache_dir import default_cache_dir
from evals.harness.building.compile_command import read_compile_command
from evals.harness.failures import Code, Failure
from evals.harness.static import include_scan, symbol_baseline, syscalls
from evals.harness.static.symbol_rules import first_unallowed
from evals.harness.targets.source_policy import SourcePolicy

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_ATEN_OP = re.compile(r"\bat::_ops::([A-Za-z0-9_]+)::")


def allowed_op(op: str, allowed: frozenset[str]) -> bool:
    """Whether the ``at::_ops`` struct name ``op`` is an allowed base name or an overload of one."""
    return op.rstrip("_") in allowed or any(op.startswith(base + "_") for base in allowed)


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
