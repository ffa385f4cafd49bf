"""Provenance: what ran where, recorded in every verdict."""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

import evals
from evals.harness.targets import Target

HARNESS_VERSION = evals.__version__
_PACKAGE = Path(evals.__file__).resolve().parent
_PROJECT_ROOT = _PACKAGE.parent
_SOURCE_SUFFIXES = frozenset({".py", ".toml", ".json", ".yaml", ".cu", ".cpp", ".h", ".md"})


def git_revision(root: Path = _PROJECT_ROOT) -> str | None:
    """``HEAD`` of the checkout the harness runs from (``+dirty`` when modified), or None."""
    if not (root / ".git").exists():
        return None
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{rev}+dirty" if dirty else rev


def source_sha256(package: Path = _PACKAGE) -> str:
    """SHA-256 over the harness package's source files (relative paths and contents).

    Names the code that ran even where the git metadata beside it is stale or absent (a copy
    of a working tree on a remote machine reported its first commit as ``+dirty``).
    """
    digest = hashlib.sha256()
    files = sorted(
        p for p in package.rglob("*")
        if p.suffix in _SOURCE_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
    )  # fmt: skip
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def collect(target: Target, upstream_versions: dict[str, str]) -> dict[str, Any]:
    """Device, driver, library versions, harness version, git revision and source digest."""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None  # type: ignore[no-untyped-call]
    return {
        "device": target.describe_device(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "upstreams": upstream_versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "harness_version": HARNESS_VERSION,
        "git_revision": git_revision(),
        "source_sha256": source_sha256(),
        "timestamp_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
