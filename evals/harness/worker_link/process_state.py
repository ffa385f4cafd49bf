"""A worker process's state as the kernel reports it, read by the parent from ``/proc``.

The parent believes nothing the worker says about itself: whether its threads are stopped
(the round audit's null round runs with the candidate's worker stopped), its
``oom_score_adj``, and the name of the signal that ended it are read here.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

__all__ = ["OOM_SCORE_ADJ", "oom_score_adj", "signal_name", "stopped"]

OOM_SCORE_ADJ = 1000
"""The candidate's worker's ``oom_score_adj``: the kernel's out-of-memory killer takes it before
any other process of the run. A candidate that filled memory (a tmpfs its private folder lives
on counts against the container's) could otherwise have the parent killed: a run without a
verdict, booked as the harness's fault. Lowering it again needs ``CAP_SYS_RESOURCE``."""


def oom_score_adj(pid: int) -> int | None:
    """The kernel's word on process ``pid``'s ``oom_score_adj`` (None if unreadable)."""
    try:
        return int(Path(f"/proc/{pid}/oom_score_adj").read_text())
    except (OSError, ValueError):
        return None


def stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (or the process is unreadable)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        states = [
            Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            for tid in tids
        ]
    except (OSError, IndexError):
        return True
    return all(state in ("T", "t") for state in states)


def signal_name(num: int) -> str:
    """A signal's name (``SIGSEGV``), or ``signal N`` for a number no name has."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
