"""Where builds are cached: ``$KERNELSEEK_CACHE`` or ``~/.cache/kernelseek``, plus ``builds``."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$KERNELSEEK_CACHE`` or ``~/.cache/kernelseek``, plus ``builds``."""
    root = os.environ.get("KERNELSEEK_CACHE") or Path.home() / ".cache" / "kernelseek"
    return Path(root) / "builds"
