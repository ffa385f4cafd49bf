"""One measurement at a time per device: a file lock around judging.

Concurrent harness runs on one GPU (or one CPU, for CPU targets) corrupt each other's timings:
Inspect runs epochs in parallel by default, and three runs sharing a 2-core machine moved one
kernel's score from 0.217x to 0.806x and 0.156x. Every run therefore holds the lock of its
device exclusive while it measures; a second run waits, says so, and records how long it
waited. A CPU target's run takes it before its builds already (a compiler beside a timed run
takes the cores it measures) and keeps it to its last scenario; a GPU target's builds and
worker starts run outside it, on the CPU, not on the measured GPU.

Checks that measure nothing (a GPU target's verification and probes) take the lock *shared*:
several runs check side by side, and none while another run measures, which takes it
*exclusive*. A run waiting for the exclusive lock stops new checkers at a gate, so checkers
never starve a measurement; at most :data:`SHARED_SLOTS` runs check at once (their GPU memory
adds up).

A file lock (``flock``) serialises runs on one host, containers included when they share the
lock folder (``KERNELSEEK_LOCK_DIR``, default ``<tmp>/kernelseek-locks``): mount it into each
sandbox. Across hosts each device needs one owner: give each job a whole GPU through the
scheduler (Kubernetes' device plugin does) or share the folder on a file system whose locks
span hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from evals.harness.failures import Code, Failure, HarnessInputError

LOCK_DIR_ENV = "KERNELSEEK_LOCK_DIR"
POLL_S = 0.2
# an exclusive holder names itself just after it takes the lock; a waiter that reads the
# file in between waits this long for the name before it settles for "another run"
NAME_GRACE_S = 1.0
SHARED_SLOTS = 4
"""Runs that may hold a device's lock shared at once (each holds one slot file)."""


@dataclass
class LockRecord:
    """Who held a device lock and when (wall-clock seconds since the epoch).

    Attributes:
        device: The device's key (``cpu`` or ``cuda-<uuid>``).
        path: The lock file.
        waited_s: Seconds spent waiting for another run to finish.
        acquired_at: When this run got the lock.
        released_at: When it gave it back (None while held).
        waited_for: The run that held it when this one asked (pid and command), if any.
        mode: ``exclusive`` (measuring) or ``shared`` (checks beside other runs' checks).
    """

    device: str
    path: str
    waited_s: float = 0.0
    acquired_at: float = 0.0
    released_at: float | None = None
    waited_for: str | None = None
    mode: str = "exclusive"

    @property
    def held_s(self) -> float:
        """Seconds the lock was held (0 while it still is, or where it never was taken)."""
        if not self.acquired_at or self.released_at is None:
            return 0.0
        return max(self.released_at - self.acquired_at, 0.0)

    def to_json(self) -> dict[str, object]:
        """JSON form, logged into the verdict."""
        return asdict(self)

    @classmethod
    def from_json(cls, raw: object) -> LockRecord:
        """Read :meth:`to_json`'s form back; a missing or malformed field reads as its default."""
        data = raw if isinstance(raw, dict) else {}

        def number(key: str) -> float:
            found = data.get(key)
            return float(found) if isinstance(found, int | float) else 0.0

        released = data.get("released_at")
        waited_for = data.get("waited_for")
        return cls(
            device=str(data.get("device", "")),
            path=str(data.get("path", "")),
            waited_s=number("waited_s"),
            acquired_at=number("acquired_at"),
            released_at=float(released) if isinstance(released, int | float) else None,
            waited_for=waited_for if isinstance(waited_for, str) else None,
            mode=str(data.get("mode", "exclusive")),
        )


def lock_dir() -> Path:
    """``$KERNELSEEK_LOCK_DIR`` or ``<tmp>/kernelseek-locks``."""
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "kernelseek-locks")


def _holder(path: Path) -> str | None:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return None
    return f"pid {info.get('pid')}: {info.get('what')}" if info else None


@contextlib.contextmanager
def device_lock(
    device: str,
    *,
    what: str,
    timeout_s: float,
    notify: Callable[[str], None] | None = None,
    shared: bool = False,
    guard: Callable[[], Failure | None] | None = None,
) -> Iterator[LockRecord]:
    """Hold the lock of ``device`` for the duration of the block.

    Args:
        device: The device's key (see :func:`device_key` of the targets).
        what: This run, in a few words, for whoever waits on it.
        timeout_s: Seconds to wait at most; then the run fails as busy.
        notify: Told once, in one line, when this run has to wait.
        shared: Take it shared (beside other shared holders, never beside an exclusive one).
        guard: Asked at every poll while this run waits; a failure it returns ends the wait
            (the candidate's process holding one of these locks itself:
            :mod:`evals.harness.sandbox.lock_tamper`).

    Raises:
        HarnessInputError: The device stayed busy for ``timeout_s``, or ``guard`` failed.
    """
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{device}.lock"
    record = LockRecord(device=device, path=str(path), mode="shared" if shared else "exclusive")
    start = time.monotonic()
    waiting = _Waiting(start + timeout_s, timeout_s, notify, guard)
    with contextlib.ExitStack() as stack:
        fd = _open(stack, path)
        if shared:
            _take_slot(stack, folder, record, waiting)
        gate = _open(stack, folder / f"{device}.gate")
        # the gate is held only while waiting for the lock: a waiting measurement holds it,
        # so no new checker slips in ahead of it
        _acquire(gate, path, record, fcntl.LOCK_EX, waiting)
        try:
            op = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
            _acquire(fd, path, record, op, waiting)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        record.waited_s = time.monotonic() - start
        record.acquired_at = time.time()
        if not shared:  # whoever waits is told who measures
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        try:
            yield record
        finally:
            if not shared:
                os.ftruncate(fd, 0)
            record.released_at = time.time()
            fcntl.flock(fd, fcntl.LOCK_UN)


def _open(stack: contextlib.ExitStack, path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    stack.callback(os.close, fd)
    return fd


@dataclass(frozen=True)
class _Waiting:
    deadline: float
    timeout_s: float
    notify: Callable[[str], None] | None
    guard: Callable[[], Failure | None] | None = None


def _take_slot(
    stack: contextlib.ExitStack, folder: Path, record: LockRecord, waiting: _Waiting
) -> None:
    """Hold one of the device's :data:`SHARED_SLOTS` slot files until the stack closes."""
    fds = [_open(stack, folder / f"{record.device}.shared{i}") for i in range(SHARED_SLOTS)]
    while True:
        for fd in fds:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                continue
        _wait(record, f"{SHARED_SLOTS} runs checking on it", waiting)


def _acquire(fd: int, path: Path, record: LockRecord, op: int, waiting: _Waiting) -> None:
    """Take ``fd``'s lock (``op``), waiting (and saying so) while another run holds it."""
    while True:
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            _wait(record, _holder(path), waiting)


def _wait(record: LockRecord, holder: str | None, waiting: _Waiting) -> None:
    """One poll's wait; an early one says who holds the device, the last fails as busy."""
    unnamed_for = time.monotonic() - (waiting.deadline - waiting.timeout_s)
    if record.waited_for is None and (holder is not None or unnamed_for >= NAME_GRACE_S):
        record.waited_for = holder or "another run"
        if waiting.notify is not None:
            waiting.notify(f"waiting for {record.device}: held by {record.waited_for}")
    failure = waiting.guard() if waiting.guard is not None else None
    if failure is not None:
        raise HarnessInputError(failure)
    if time.monotonic() > waiting.deadline:
        reason = (
            f"device {record.device} stayed busy for {waiting.timeout_s:.0f} s "
            f"(held by {record.waited_for or holder or 'another run'}; lock {record.path})"
        )
        raise HarnessInputError(Failure(Code.DEVICE_BUSY, reason))
    time.sleep(POLL_S)
