"""A line at least every 30 s while a long command runs without a terminal.

Inspect's display redraws a terminal; written to a file or a pipe (CI, ``nohup``, a notebook's
cell) an eval prints nothing until a sample ends, and one sample can take many minutes. Around
such a run, :func:`heartbeat` prints ``[kernelseek] <what>: still running, 2m30s`` to stderr
every ``every_s`` seconds, from a daemon thread, when stderr is no terminal (a terminal has
Inspect's own display). The line names the newest log file under the log folder, so a reader
knows where to look.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["EVERY_S", "heartbeat"]

EVERY_S = 30.0
"""Seconds between two lines: the most a reader without a terminal waits for a sign of life."""


def _newest_log(log_dir: Path | None) -> str:
    if log_dir is None or not log_dir.is_dir():
        return ""
    logs = sorted(log_dir.glob("*.eval"), key=lambda p: p.stat().st_mtime)
    return f" (log: {logs[-1]})" if logs else f" (logs: {log_dir})"


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@contextmanager
def heartbeat(
    what: str,
    *,
    log_dir: Path | None = None,
    every_s: float = EVERY_S,
    stream: TextIO | None = None,
    force: bool = False,
) -> Iterator[None]:
    """Print a line every ``every_s`` seconds while the body runs, without a terminal.

    Args:
        what: What runs, as the line names it (``eval tasks/cpu_attention``).
        log_dir: The run's log folder; the line names its newest ``.eval`` file.
        every_s: Seconds between lines.
        stream: Where the lines go (default: ``sys.stderr``).
        force: Print even where ``stream`` is a terminal (for tests).
    """
    out = sys.stderr if stream is None else stream
    if not force and out.isatty():
        yield
        return
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every_s):
            line = f"[kernelseek] {what}: still running, {_elapsed(time.monotonic() - start)}"
            print(line + _newest_log(log_dir), file=out, flush=True)

    thread = threading.Thread(target=beat, name="kernelseek-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every_s)
