"""Where builds are cached, and its lock.

``$KERNELSEEK_CACHE`` when set; otherwise the checkout's own ``.cache/kernelseek`` when the
package runs from a source checkout (so two checkouts never share a build), else
``~/.cache/kernelseek`` (an installed package).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from collections.abc import Iterator
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]


@functools.cache
def _checkout_root() -> Path | None:
    """The source checkout this package runs from (``pyproject.toml`` beside ``evals/``)."""
    pyproject = _PACKAGE_ROOT / "pyproject.toml"
    if not ((_PACKAGE_ROOT / "evals" / "__init__.py").is_file() and pyproject.is_file()):
        return None
    ours = 'name = "kernelseek-bench"' in pyproject.read_text(errors="replace")
    return _PACKAGE_ROOT if ours else None


def default_cache_dir() -> Path:
    """The ``builds`` folder of ``$KERNELSEEK_CACHE``, the checkout's cache or the user's."""
    named = os.environ.get("KERNELSEEK_CACHE")
    if named:
        return Path(named) / "builds"
    checkout = _checkout_root()
    root = checkout / ".cache" / "kernelseek" if checkout else Path.home() / ".cache" / "kernelseek"
    return root / "builds"


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
