"""What the candidate's process could change that outlives it, checked from outside.

Its worker may write only in a private folder (:mod:`evals.landlock`), where the kernel
offers Landlock. Whether or not it does, the parent records the places whose change would
outlast the run before the candidate's worker starts, and again once every process of the
candidate is gone: the installed packages' top level (a ``.pth`` file or ``sitecustomize``
runs in every later Python process, the upstreams' workers included), the harness's own
modules, and the build cache's records (the trivial kernel's symbol baseline that the
allow-list is diffed against). A change there fails the run (``sandbox_violation``); files
left in the private folder are only reported, since the folder is removed.
"""

from __future__ import annotations

import hashlib
import site
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import evals
from evals.harness.failures import Code, Failure
from evals.harness.verdict.record import Verdict

__all__ = ["Footprint", "Place", "Watch", "changes", "judge", "protected_places", "snapshot"]

Footprint = dict[str, tuple[int, int, str]]
"""Path -> (size, mtime_ns, sha256 of the content for small files, else "")."""

_HASHED_BYTES = 1 << 20


Place = tuple[Path, str]
"""A folder and a glob pattern below it."""

STARTUP_FILES = ("*.pth", "sitecustomize.py", "usercustomize.py")
"""What Python runs from a site-packages folder at every start."""


def protected_places(cache_root: Path | None) -> tuple[list[Place], list[Place]]:
    """Places to record: ``(any change counts, only changes of existing files count)``.

    Any change: what site-packages runs at start-up and the harness's own modules. Existing
    files only: the cache's baseline records (another run may add one meanwhile).
    """
    folders = {Path(p) for p in site.getsitepackages()} | {Path(site.getusersitepackages())}
    folders |= {Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    strict = [(f, pattern) for f in sorted(folders) if f.is_dir() for pattern in STARTUP_FILES]
    strict.append((Path(evals.__file__).resolve().parent, "**/*.py"))  # the evals package
    existing = []
    if cache_root is not None and cache_root.is_dir():
        existing.append((cache_root, "baseline-*/symbols.json"))  # the allow-list diff
    return strict, existing


def snapshot(places: Iterable[Place]) -> Footprint:
    """Size, modification time and (small files) content hash of every matching path."""
    seen: Footprint = {}
    for folder, pattern in places:
        for path in folder.glob(pattern):
            try:
                stat = path.lstat()
                digest = ""
                if path.is_file() and stat.st_size <= _HASHED_BYTES:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue
            seen[str(path)] = (stat.st_size, stat.st_mtime_ns, digest)
    return seen


def changes(
    before: Mapping[str, tuple[int, int, str]], after: Footprint, *, created: bool = True
) -> list[str]:
    """Paths created (if ``created`` counts), removed or changed between two snapshots."""
    found = [f"created {p}" for p in sorted(set(after) - set(before))] if created else []
    found += [f"removed {p}" for p in sorted(set(before) - set(after))]
    found += [f"changed {p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    return found


def judge(found: list[str]) -> Failure | None:
    """``sandbox_violation`` naming what changed (:func:`changes`), or None."""
    if not found:
        return None
    listed = "; ".join(found[:5]) + (f"; ... {len(found) - 5} more" if len(found) > 5 else "")
    reason = f"while the candidate's process ran, places that outlive it changed: {listed}"
    return Failure(Code.SANDBOX_VIOLATION, reason)


class Watch:
    """The protected places recorded now, compared by :meth:`failure` later."""

    def __init__(self, cache_root: Path | None) -> None:
        self.strict, self.existing = protected_places(cache_root)
        self.before = (snapshot(self.strict), snapshot(self.existing))

    def report(self, verdict: Verdict, left: list[str], *, confined: bool = False) -> None:
        """Record what the gone candidate left (``left``: reported) and changed (a failure).

        ``confined``: every process that touched the candidate could write only beneath its
        own folder (Landlock active on the build and the worker), so a change was made by
        something else on the machine: the environment's fault, not the candidate's.
        """
        verdict.checks["private_folder"] = (
            f"left {len(left)} file(s), removed with the folder: {', '.join(left[:5])}"
            if left
            else "passed: the candidate's process left no file in its private folder"
        )
        if left:
            verdict.flags.append(
                f"the candidate's process left files behind: {', '.join(left[:5])}"
            )
        failure = self.failure()
        if failure is not None and confined:
            why = f"{failure.reason} (not by the candidate: its processes could not write there)"
            failure = Failure(Code.ENVIRONMENT, why)
        if failure is None:
            verdict.checks["footprint"] = (
                "passed: site-packages start-up files, the harness and the cache's records "
                "unchanged"
            )
            return
        verdict.checks["footprint"] = f"failed: {failure.reason}"
        verdict.flags.append(failure.reason)
        verdict.failure = verdict.failure or failure

    def failure(self) -> Failure | None:
        """``sandbox_violation`` if a protected place changed since the start, else None."""
        found = changes(self.before[0], snapshot(self.strict))
        found += changes(self.before[1], snapshot(self.existing), created=False)
        return judge(found)
