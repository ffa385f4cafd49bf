"""Locks the candidate's process holds on the lock folder's files: the candidate's failure.

The candidate's worker may open any file read-only (Landlock confines writes only) and may call
``flock`` (its seccomp filter allows it: the CUDA driver's libraries are not ours to vet). So
from a library initialiser or a call it can take its device's lock, the gate or a check slot
(:mod:`evals.harness.measurement.device_lock`), or another device's: its own run would wait until it
failed as ``device_busy``, an error that is not the candidate's, and every other run on the device
would wait with it. The kernel says who holds which lock in ``/proc/locks``; a lock held there by
the candidate's process on a file of the lock folder fails the run as ``sandbox_violation``. The
parent asks while it waits for a lock, once the worker has loaded the library, and before it lets go
of each hold.

Files are matched by inode number alone: on an overlay file system (a container's) the kernel
may name another device than ``stat`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

from evals.harness.failures import Code, Failure

__all__ = ["LOCKS", "held_by", "lock_holders", "tamper_failure"]

LOCKS = Path("/proc/locks")


def lock_holders(text: str) -> dict[int, set[int]]:
    """Inode number to the pids that hold a lock on it, from ``/proc/locks``'s text.

    A line is ``N: KIND ADVISORY MODE PID MAJ:MIN:INODE START END``; a waiter's has ``->``
    after ``N:`` and holds nothing, so it is left out.
    """
    holders: dict[int, set[int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            pid, inode = int(fields[4]), int(fields[5].rsplit(":", 1)[1])
        except (ValueError, IndexError):
            continue
        holders.setdefault(inode, set()).add(pid)
    return holders


def held_by(pid: int, folder: Path, locks: Path = LOCKS) -> list[str]:
    """Names of ``folder``'s files on which process ``pid`` holds a lock (sorted).

    Empty where ``/proc/locks`` or the folder cannot be read: nothing is known against ``pid``.
    """
    try:
        holders = lock_holders(locks.read_text())
        files = {e.inode(): e.name for e in os.scandir(folder) if e.is_file()}
    except OSError:
        return []
    return sorted(name for inode, name in files.items() if pid in holders.get(inode, ()))


def tamper_failure(pid: int, folder: Path, locks: Path = LOCKS) -> Failure | None:
    """``sandbox_violation`` when the candidate's process ``pid`` holds a lock in ``folder``."""
    names = held_by(pid, folder, locks)
    if not names:
        return None
    reason = (
        f"the candidate's process held a lock on {', '.join(names)} in the device lock folder "
        f"{folder}: it would keep every run on the device waiting"
    )
    return Failure(Code.SANDBOX_VIOLATION, reason)
