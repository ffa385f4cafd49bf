"""Where builds are cached (``$KERNELSEEK_CACHE`` or ``~/.cache/kernelseek``), and its lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def default_cache_dir() -> Path:
    """``$KERNELSEEK_CACHE`` or ``~/.cache/kernelseek``, plus ``builds``."""
    root = os.environ.get("KERNELSEEK_CACHE") or Path.home() / ".cache" / "kernelseek"
    return Path(root) / "builds"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created with its folder) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
