"""Who may read whose memory: the parent's secrets out of the candidate's reach.

The parent holds the run's secret seed, and from it what the candidate must not know ahead:
which timed outputs it will fetch, which call of each wall-clock batch it will verify, the
contract scenarios it draws. Linux lets a process open another's ``/proc/PID/mem`` (and
``environ``, ``maps``, ``fd/``) when both run as one user and the other is *dumpable*, or when
it holds ``CAP_SYS_PTRACE``; Yama, where a kernel has it, may narrow that, and many hosts and
containers have none or scope 0. The candidate's worker is the parent's child and runs as its
user, and the seccomp filter lets it open files for reading: a sandboxed worker read its
parent's heap through ``/proc`` and found a secret planted there (``tests/test_memory_walls.py``).

So the parent makes itself non-dumpable before it draws its seed (:func:`seal`), and every
worker drops ``CAP_SYS_PTRACE`` (effective, permitted, inheritable, ambient, bounding) before
the candidate's library is loaded (:func:`drop_ptrace`, from
:func:`evals.harness.sandbox.os_sandbox.apply`): a process of the same user then needs that
capability to read the parent, and root's worker no longer has it. The workers make
themselves non-dumpable too (``os_sandbox``: no core dumps), so the candidate cannot read the
upstreams' worker either. The parent holds the worker to the kernel's word:
:func:`holds_ptrace` reads its capability sets from ``/proc/PID/status``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from pathlib import Path

__all__ = ["drop_ptrace", "holds_ptrace", "ptrace_held", "seal"]

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_SYS_PTRACE = 19
_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Sets(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def seal() -> str:
    """Make this process non-dumpable: others of its user can no longer read its memory.

    Returns what is in force, for the verdict (``sealed: ...`` or ``not sealed: why``). Lasts
    for the process's life (an ``execve`` of an ordinary program resets it in the new image).
    """
    libc = _libc()
    if libc is None or libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return "not sealed: prctl(PR_SET_DUMPABLE) is not available here"
    return (
        "sealed: the parent is not dumpable and the candidate's worker holds no CAP_SYS_PTRACE, "
        "so its memory (the run's secret seed) cannot be read through /proc"
    )


def drop_ptrace() -> str:
    """Drop ``CAP_SYS_PTRACE`` from every capability set of this process, for good.

    Returns ``dropped``, ``not held`` or ``kept: why``. Lowering one's own sets needs no
    privilege; the bounding set needs ``CAP_SETPCAP`` and is left as it is without it (with no
    new privileges, nothing executed can regain a capability the permitted set lost).
    """
    libc = _libc()
    if libc is None:
        return "kept: no C library to call"
    header = _Header(_CAPABILITY_VERSION_3, 0)
    sets = (_Sets * 2)()
    if libc.capget(ctypes.byref(header), sets) != 0:
        return f"kept: capget failed (errno {ctypes.get_errno()})"
    bit = 1 << _CAP_SYS_PTRACE
    own = sets[0]  # capabilities 0-31; CAP_SYS_PTRACE is 19
    held = bool((own.effective | own.permitted | own.inheritable) & bit)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_PTRACE, 0, 0, 0)  # EPERM without CAP_SETPCAP
    if not held:
        return "not held"
    keep = ~bit & 0xFFFFFFFF
    own.effective &= keep
    own.permitted &= keep
    own.inheritable &= keep
    if libc.capset(ctypes.byref(header), sets) != 0:
        return f"kept: capset failed (errno {ctypes.get_errno()})"
    return "dropped"


def holds_ptrace(pid: int) -> bool | None:
    """Whether process ``pid`` holds ``CAP_SYS_PTRACE``, by ``/proc`` (None if unreadable)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return ptrace_held(dict(line.split(":", 1) for line in status.splitlines() if ":" in line))


def ptrace_held(status: Mapping[str, str]) -> bool | None:
    """Whether a process holds ``CAP_SYS_PTRACE`` (effective or permitted), by its status.

    ``status``: the fields of its ``/proc/PID/status``. None if they lack its capability sets.
    """
    try:
        sets = [int(status[name].strip(), 16) for name in ("CapEff", "CapPrm")]
    except (KeyError, ValueError):
        return None
    return any(s >> _CAP_SYS_PTRACE & 1 for s in sets)
