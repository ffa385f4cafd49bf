"""Confinement of the processes that read a candidate's source: the compiler, linker, ninja.

No candidate code runs in them (the build links the library and never loads it: the first
``dlopen`` is in the candidate's confined worker), yet they parse what the candidate wrote, so
they run as little as they need: file changes only beneath their own folders (Landlock, as
the worker's), no socket of any family, no reaching into another process, and nothing they
start outlives the run (the parent sweeps its process tree:
:mod:`evals.harness.sandbox.process_tree`).

``python -P -m evals.harness.sandbox.confine FOLDER[:FOLDER...] -- COMMAND...`` confines itself,
then executes ``COMMAND`` (the preprocessor that scans a candidate's includes runs this way); the
build child calls :func:`confine_tool` itself before it compiles.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from evals.harness.sandbox.os_sandbox import apply_tool_filter
from evals.landlock import restrict_writes

__all__ = ["confine_tool", "confined_argv"]


def confine_tool(writable: Sequence[str]) -> dict[str, object]:
    """Confine this process and its future children: writes beneath ``writable``, no network.

    Irreversible. Never raises: what could not be applied is said in the record.

    Returns:
        ``{"writes": ..., "seccomp": ..., "no_new_privs": bool}`` (:func:`restrict_writes`,
        :func:`~evals.harness.sandbox.os_sandbox.apply_tool_filter`).
    """
    writes = restrict_writes([str(f) for f in writable])
    return {"writes": writes, **apply_tool_filter()}


def confined_argv(writable: Sequence[str], argv: Sequence[str]) -> list[str]:
    """``argv`` run under :func:`confine_tool` (this module's command line)."""
    folders = os.pathsep.join(str(f) for f in writable)
    return [sys.executable, "-P", "-m", "evals.harness.sandbox.confine", folders, "--", *argv]


def main(argv: list[str]) -> int:
    """Confine this process to the folders in ``argv[1]``, then execute what follows ``--``."""
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m evals.harness.sandbox.confine FOLDER[:FOLDER...] -- COMMAND...")
        return 2
    confine_tool([f for f in argv[1].split(os.pathsep) if f])  # where unavailable: as is
    try:
        os.execvp(argv[3], argv[3:])
    except OSError as exc:
        print(f"cannot run {argv[3]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # unreachable: execvp replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv))
