"""Building candidates: content-hash cache, a build timeout, trimmed compiler errors.

The compiler runs in a child process (``python -m evals.harness.building.build_child``) in its own
process group, confined (:mod:`evals.harness.sandbox.confine`: file changes only beneath the build's
folder, no sockets) and never loading what it links; a timeout kills the whole group, and so
does the end of the build (what escaped the group the parent's process-tree sweep finds:
:mod:`evals.harness.sandbox.process_tree`).

Whose fault a failed build is, the parent decides from what it saw: a child that failed before
it said it was confined (before it read the candidate) failed for the environment; once it has,
any failure (the compiler's, a crash, a signal) is the candidate's build error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from evals.harness.building.build_protocol import BUILT, COMPILER_FAILED
from evals.harness.building.cache_dir import default_cache_dir, locked
from evals.harness.failures import Code, Failure
from evals.harness.sandbox.hygiene import clean_environment, with_package_root
from evals.harness.targets.base import Target

BUILD_FORMAT = 4
"""Bump to invalidate every cached build."""

_ERROR_LINE = re.compile(r"\berror\b|\bundefined reference\b|fatal", re.IGNORECASE)
_DISK_FULL = re.compile(r"No space left on device|Disk quota exceeded")
_QUOTED = re.compile(r"^\s*\d*\s*\|")  # the compiler quoting a source line: "  3 | ..."
_MAX_LOG_LINES = 40
_MAX_LOG_CHARS = 4000
SOURCE = "{candidate source}"
"""Stands for the compiled file in a cached log: the cache's copy is named for its content,
and a person reading the log looks for their own file (trimming may cut a long path short, so
it is replaced before trimming)."""


@dataclass(frozen=True)
class BuildResult:
    """Outcome of a build.

    Attributes:
        key: Content hash of source, build settings and toolchain.
        library: Path of the shared library when the build succeeded.
        failure: Why the build failed, or None.
        log: The compiler output, trimmed to the useful part.
        seconds: Wall time of this build (0 when taken from the cache).
        cached: Whether the result came from the cache.
        confinement: What confined the build's processes (:func:`~evals.harness.sandbox.confine.
            confine_tool`'s record), as the build child said; None where it never got there.

    """

    key: str
    library: Path | None
    failure: Failure | None
    log: str
    seconds: float
    cached: bool
    confinement: dict[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        """JSON form."""
        return {
            "key": self.key,
            "library": str(self.library) if self.library else None,
            "failure": self.failure.to_json() if self.failure else None,
            "log": self.log,
            "seconds": self.seconds,
            "cached": self.cached,
            "confinement": self.confinement,
        }


def build_key(target: Target, source: bytes) -> str:
    """Hash of everything that determines the built library."""
    h = hashlib.sha256()
    meta = {
        "format": BUILD_FORMAT,
        "target": target.name,
        "spec": target.build.to_json(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": sys.version_info[:2],
        # the environment whose headers and libraries the build uses: a library cached from
        # another virtual environment links that one's torch, and its log names its paths
        "environment": [sys.prefix, str(Path(torch.__file__).parent)],
        "toolchain": toolchain(target.build.with_cuda),
    }
    h.update(json.dumps(meta, sort_keys=True).encode())
    h.update(b"\0")
    h.update(source)
    return h.hexdigest()


@functools.cache
def toolchain(with_cuda: bool) -> dict[str, str | None]:
    """The compilers a build would use: their paths and first version lines.

    Part of the cache key, so a cached compiler error is never replayed to another toolchain.
    """
    found: dict[str, str | None] = {}
    names = ("c++", "nvcc") if with_cuda else ("c++",)
    for name in names:
        path = shutil.which(name, path=_build_path())
        found[name] = f"{path} {_version_line(path)}" if path else None
    return found


def _build_path() -> str:
    """The PATH the build child gets (this interpreter's folder first)."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def _version_line(path: str) -> str:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "(no version)"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no version)"


def trim_log(log: str) -> str:
    """Keep the compiler's diagnostics: from a little before the first error, at most 40 lines."""
    lines = [ln if len(ln) <= 400 else ln[:200] + " ... " + ln[-100:] for ln in log.splitlines()]
    first = next((i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)), None)
    if first is None:
        kept = lines[-_MAX_LOG_LINES:]
    else:
        kept = lines[max(0, first - 2) : first - 2 + _MAX_LOG_LINES]
    text = "\n".join(kept)
    return text if len(text) <= _MAX_LOG_CHARS else text[:_MAX_LOG_CHARS] + "\n[... trimmed]"


def first_error(log: str) -> str:
    """The first diagnostic line of a compiler log, for one-line reasons."""
    for line in log.splitlines():
        if _ERROR_LINE.search(line) and not line.startswith("FAILED"):
            return line.strip()
    return "compiler failed (see log)"


def _from_record(record: dict[str, object], key: str) -> BuildResult | None:
    lib = record.get("library")
    failure = record.get("failure")
    log = str(record.get("log", ""))
    found = record.get("confinement")
    confinement = found if isinstance(found, dict) else None
    if isinstance(lib, str) and Path(lib).is_file():
        return BuildResult(key, Path(lib), None, log, 0.0, True, confinement)
    if isinstance(failure, dict) and failure.get("code") == Code.BUILD_ERROR.value:
        failed = Failure(Code.BUILD_ERROR, failure["reason"])
        return BuildResult(key, None, failed, log, 0.0, True, confinement)
    return None


def build(
    target: Target, source_path: Path, *, cache_dir: Path | None = None, clean_env: bool = False
) -> BuildResult:
    """Build ``source_path`` for ``target``, reusing a cached build of identical content.

    Compiler errors are cached (they are deterministic); timeouts and failures of the build
    environment (no compiler, a module the build child cannot import) are not.
    """
    source = source_path.read_bytes()
    key = build_key(target, source)
    root = (cache_dir or default_cache_dir()) / key[:24]
    record_path = root / "result.json"
    with locked(root.with_suffix(".lock")):
        if record_path.is_file():
            cached = _from_record(json.loads(record_path.read_text()), key)
            if cached is not None:
                return _user_paths(cached, source_path)
        result, cacheable = _compile(target, source, key, root, clean_env)
        if cacheable:
            record_path.write_text(json.dumps(result.to_json()))
        return _user_paths(result, source_path)


def _user_paths(result: BuildResult, source: Path) -> BuildResult:
    """The compiler's diagnostics with :data:`SOURCE` named as the user's file."""
    mine = str(source)
    failure = result.failure
    if failure is not None:
        failure = Failure(failure.code, failure.reason.replace(SOURCE, mine))
    log = result.log.replace(SOURCE, mine).replace(COMPILER_FAILED, "").rstrip()
    return dataclasses.replace(result, log=log, failure=failure)


def _disk_full(text: str) -> str | None:
    """The build output's line saying the disk is full, or None.

    Only a line of the tools' own: a diagnostic about the candidate's code (naming
    :data:`SOURCE`, or quoting a source line) may say anything, e.g. an ``#error`` with these
    words, and must stay the candidate's build error.
    """
    for line in text.splitlines():
        if _DISK_FULL.search(line) and SOURCE not in line and not _QUOTED.match(line):
            return line
    return None


def _compile(
    target: Target, source: bytes, key: str, root: Path, clean_env: bool
) -> tuple[BuildResult, bool]:
    """Build in ``root``: the result, and whether it may be cached.

    A success and the compiler's own rejection are cached (both are deterministic).
    """
    src_dir = root / "src"
    src_dir.mkdir(parents=True, exist_ok=True)
    src = src_dir / f"candidate{target.contract.source_suffix}"
    src.write_bytes(source)
    build_dir, tmp = root / "build", root / "tmp"
    spec = {
        "name": f"ks_{key[:16]}",
        "source": str(src),
        "build_directory": str(build_dir),
        "writable": [str(build_dir), str(tmp)],
        **target.build.to_json(),
    }
    build_dir.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    env = with_package_root(clean_environment(os.environ) if clean_env else os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(tmp)  # the compilers' temporary files: beneath what they may write
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "evals.harness.building.build_child", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=target.build.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        seconds = time.monotonic() - start
        reason = f"build timed out after {target.build.timeout_s:.0f} s"
        failed = Failure(Code.BUILD_TIMEOUT, reason)
        return BuildResult(key, None, failed, "", seconds, False, _confinement(out)), False
    _kill_group(proc.pid)  # nothing the build started outlives it
    shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.monotonic() - start
    text = out.decode(errors="replace").replace(str(src), SOURCE)
    confinement = _confinement(out)
    log = trim_log("\n".join(ln for ln in text.splitlines() if not ln.startswith(BUILT)))
    library = build_dir / f"{spec['name']}.so"
    if library.is_file():  # linked; loading problems are the worker's to report
        return BuildResult(key, library, None, log, seconds, False, confinement), True
    full = _disk_full(text)
    if full is not None:  # the machine's fault, whatever the compiler then said
        failure = Failure(Code.ENVIRONMENT, f"the disk is full while building: {full.strip()}")
    elif confinement is not None:  # the candidate's source was in play: its build failed
        failure = Failure(Code.BUILD_ERROR, f"build error: {first_error(log)}")
    else:  # the child failed before it read the candidate: the environment's fault
        last = text.strip().splitlines()[-1] if text.strip() else f"exit {proc.returncode}"
        failure = Failure(Code.HARNESS_ERROR, f"the build environment failed: {last}")
    result = BuildResult(key, None, failure, log, seconds, False, confinement)
    return result, COMPILER_FAILED in text


def _confinement(out: bytes) -> dict[str, object] | None:
    """The confinement record the build child printed before it compiled, or None."""
    head = f"{BUILT} confinement "
    for line in out.decode(errors="replace").splitlines():
        if line.startswith(head):
            with contextlib.suppress(ValueError):
                found = json.loads(line[len(head) :])
                return found if isinstance(found, dict) else None
    return None


def _kill_group(pgid: int) -> None:
    """Kill every process left in the build's process group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
