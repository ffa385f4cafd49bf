"""The trivial kernel's build, started beside the candidate's so the symbol check waits less.

The symbol check diffs the candidate's undefined symbols against a trivial kernel compiled
with the same command (:mod:`evals.harness.static.symbol_baseline`). The first run on a machine
would compile that kernel after the candidate's build (16 s for ``fa3_hopper`` on the H200).
Here it is built as any candidate is (same target, same build spec, the candidate's cache) while
the candidate compiles; its symbol list is recorded under the identity of its own compile
command. When that identity equals the candidate's (it does: only the extension's name
differs, and the identity ignores it), the check finds the record and compiles nothing;
when it does not, the check compiles the baseline itself as before. A failure here is never
a verdict: the check recomputes whatever this could not record.
"""

from __future__ import annotations

import threading
from pathlib import Path

from evals.harness.building.build import build
from evals.harness.building.compile_command import read_compile_command
from evals.harness.static import symbol_baseline
from evals.harness.static.static_checks import candidate_objects, undefined_symbols
from evals.harness.targets.base import Target


def start(target: Target, *, clean_env: bool, cache: Path) -> threading.Thread | None:
    """Start building ``target``'s trivial kernel in a thread, or None where none is checked.

    Args:
        target: The candidate's target.
        clean_env: Build in the cleaned environment (as ``score`` builds the candidate).
        cache: The build cache to build in and record the baseline under (the one the
            symbol check reads: ``score``'s private cache, else the shared one).

    Returns:
        The started thread (join it before the symbol check), or None.
    """
    policy = target.policy
    if policy is None or not policy.check_symbols or policy.trivial_kernel is None:
        return None
    trivial = policy.trivial_kernel
    thread = threading.Thread(
        target=_prebuild,
        args=(target, trivial, clean_env, cache),
        name="baseline-prebuild",
        daemon=True,
    )
    thread.start()
    return thread


def _prebuild(target: Target, trivial: Path, clean_env: bool, cache: Path) -> None:
    try:
        built = build(target, trivial, cache_dir=cache, clean_env=clean_env)
        if built.library is None:
            return
        cmd = read_compile_command(built.library.parent)
        if cmd is None:
            return
        objects = candidate_objects(built.library)
        if objects:
            symbols = [s for obj in objects for s in undefined_symbols(obj)]
            symbol_baseline.store_baseline(cmd, trivial, cache, symbols)
    except Exception:  # never a verdict: the symbol check recomputes what this missed
        return
