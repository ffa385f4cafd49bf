"""One measurement at a time per device: an exclusive file lock around judging.

Concurrent harness runs on one GPU (or one CPU, for CPU targets) corrupt each other's timings:
Inspect runs epochs in parallel by default, and three runs sharing a 2-core machine moved one
kernel's score from 0.217x to 0.806x and 0.156x. Every run therefore takes the lock of its
device before it starts its worker and holds it until the last scenario is judged; a second
run waits, says so, and records how long it waited. A CPU target's run takes it before its
builds already (a compiler beside a timed run takes the cores it measures); a GPU target's
builds run outside it, on the CPU, not on the measured GPU.

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
    """

    device: str
    path: str
    waited_s: float = 0.0
    acquired_at: float = 0.0
    released_at: float | None = None
    waited_for: str | None = None

    def to_json(self) -> dict[str, object]:
        """JSON form, logged into the verdict."""
        return asdict(self)


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
) -> Iterator[LockRecord]:
    """Hold the exclusive lock of ``device`` for the duration of the block.

    Args:
        device: The device's key (see :func:`device_key` of the targets).
        what: This run, in a few words, for whoever waits on it.
        timeout_s: Seconds to wait at most; then the run fails as busy.
        notify: Told once, in one line, when this run has to wait.

    Raises:
        HarnessInputError: The device stayed busy for ``timeout_s``.
    """
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{device}.lock"
    record = LockRecord(device=device, path=str(path))
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _acquire(fd, path, record, timeout_s=timeout_s, notify=notify)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        try:
            yield record
        finally:
            os.ftruncate(fd, 0)
            record.released_at = time.time()
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(
    fd: int,
    path: Path,
    record: LockRecord,
    *,
    timeout_s: float,
    notify: Callable[[str], None] | None,
) -> None:
    """Take the lock, waiting (and saying so) while another run holds it."""
    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if record.waited_for is None:
                record.waited_for = _holder(path) or "another run"
                if notify is not None:
                    notify(f"waiting for {record.device}: held by {record.waited_for}")
            if time.monotonic() - start > timeout_s:
                reason = (
                    f"device {record.device} stayed busy for {timeout_s:.0f} s "
                    f"(held by {record.waited_for}; lock {path})"
                )
                raise HarnessInputError(Failure(Code.DEVICE_BUSY, reason)) from None
            time.sleep(POLL_S)
    record.waited_s = time.monotonic() - start
    record.acquired_at = time.time()
