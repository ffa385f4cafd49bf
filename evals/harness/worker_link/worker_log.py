"""The worker's captured output, capped: its head and tail kept, the middle counted.

A candidate that prints on every call would otherwise grow the log without limit (158 MB on
the smoke suite alone). A thread drains the worker's stdout and stderr pipe as it fills, so
the worker never blocks on a full pipe.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import IO

HEAD_BYTES = 32 << 10
TAIL_BYTES = 32 << 10
_CHUNK = 1 << 16


class CappedLog:
    """Reads a stream to its end in a thread, keeping the first and last bytes.

    Args:
        stream: The worker's stdout (stderr merged into it).
        head_bytes: Bytes kept from the start.
        tail_bytes: Bytes kept from the end.
    """

    def __init__(
        self, stream: IO[bytes], *, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES
    ) -> None:
        self.head = bytearray()
        self.total = 0
        self._head_bytes, self._tail_bytes = head_bytes, tail_bytes
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(_CHUNK) if hasattr(stream, "read1") else stream.read(_CHUNK):
            self._add(chunk)

    def _add(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            room = self._head_bytes - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if not chunk:
                return
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_bytes:
                self._tail_size -= len(self._tail.popleft())
            excess = self._tail_size - self._tail_bytes
            if excess > 0:  # a chunk read under load can be larger than the whole tail
                self._tail[0] = self._tail[0][excess:]
                self._tail_size -= excess

    @property
    def dropped(self) -> int:
        """Bytes neither in the head nor in the tail."""
        with self._lock:
            return self.total - len(self.head) - self._tail_size

    def text(self) -> str:
        """Head, a line saying how much was dropped (if anything), tail."""
        with self._lock:
            tail = b"".join(self._tail)
            dropped = self.total - len(self.head) - len(tail)
        middle = f"\n[... {dropped} bytes of worker output dropped ...]\n" if dropped else ""
        return self.head.decode(errors="replace") + middle + tail.decode(errors="replace")

    def tail_lines(self, lines: int) -> list[str]:
        """The last ``lines`` non-empty lines."""
        return [ln for ln in self.text().strip().splitlines() if ln.strip()][-lines:]

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the stream's end (the worker's exit)."""
        self._thread.join(timeout_s)

    def save(self, path: Path) -> None:
        """Write the kept output to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text())
