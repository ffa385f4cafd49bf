"""The run's process tree, kept empty but for the harness at the moments that count.

The parent is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process that a build or a
worker started and that outlived its own parent, even one that left its session and process
group, is re-parented to the harness rather than to init, where the parent finds it. Before the
upstreams are timed and before the verdict is written, :func:`sweep` kills every child of the
harness it did not start itself (the workers it names) with all their descendants, and says
what it found: a process a candidate-touching process left behind is the candidate's failure.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Collection
from pathlib import Path

from evals.harness.failures import Code, Failure

__all__ = ["become_subreaper", "children", "outlived", "reap_strays", "sweep"]

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 16
"""Sweeps repeated at most this often: killing a process hands its children to the harness."""


_REAPING: list[int] = []
"""The pid that became the subreaper (a forked child does not inherit the role)."""


def become_subreaper() -> bool:
    """Make this process the subreaper of everything it starts; False where Linux refuses.

    The harness's command line does (:func:`evals.harness.pipeline.cli.main`); a harness called in
    another program's process (a test's) does not, and then :func:`reap_strays` leaves that
    program's children alone.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    _REAPING[:] = [os.getpid()]
    return True


def reap_strays(keep: Collection[int] = ()) -> list[str]:
    """:func:`sweep` where this process is the subreaper of its run, else nothing."""
    return sweep(keep) if [os.getpid()] == _REAPING else []


def children(pid: int | None = None) -> list[int]:
    """The live (not yet reaped) children of ``pid`` (default: this process), from ``/proc``."""
    parent = os.getpid() if pid is None else pid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            # the command name is in parentheses and may hold anything: fields follow the last
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == parent:
                found.append(int(entry.name))
    return sorted(found)


def _state(pid: int) -> str:
    """The process's state letter (``Z``: a zombie), or "" when it is gone."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = (Path("/proc") / str(pid) / "stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()[0]
    return ""


def _describe(pid: int) -> str:
    with contextlib.suppress(OSError):
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
        if words:
            return f"pid {pid}: {' '.join(words)[:120]}"
    return f"pid {pid}"


def sweep(keep: Collection[int] = ()) -> list[str]:
    """Kill every child of this process but ``keep`` (and theirs), reaping them; what was found.

    Each stray is stopped before it is read and killed, so it cannot start another meanwhile;
    the processes killing it hands over are found by the next round.
    """
    found: list[str] = []
    for _ in range(_ROUNDS):
        strays = [pid for pid in children() if pid not in keep]
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        for pid in strays:
            if _state(pid) != "Z":  # a zombie runs nothing: it is only reaped
                found.append(_describe(pid))
            for child in children(pid):  # killed below, so they come to this process next
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(child, signal.SIGSTOP)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return found


def outlived(what: str, strays: list[str]) -> Failure | None:
    """``sandbox_violation`` naming the processes ``what`` left running (now killed), or None."""
    if not strays:
        return None
    listed = "; ".join(strays[:3]) + (f"; ... {len(strays) - 3} more" if len(strays) > 3 else "")
    return Failure(Code.SANDBOX_VIOLATION, f"{what} left processes running: {listed}")
