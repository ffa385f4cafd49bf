"""What a candidate adds to the undefined symbols of a trivial kernel of its target.

Each target ships a trivial kernel (``evals/targets/<target>/trivial<suffix>``): the contract's
registration and an allocation (and, on the GPU, one launch). Compiled with the candidate's
own compile command, its undefined symbols are what any candidate needs (torch's operator
registration, allocator and error machinery for this torch and compiler); the symbol check
then judges only what the candidate adds, against the allow-list of its target. The
baseline's symbol list is cached in the shared build cache (also for ``score``, whose own
builds go to a private cache), keyed by the command and the trivial source, so each toolchain
and target compiles it once. A baseline planted there could only hide symbols that the deny
rules, which judge every symbol first, let through.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from evals.harness.building.cache_dir import locked
from evals.harness.building.compile_command import CompileCommand
from evals.targets import target_folder

_TIMEOUT_S = 600.0


class BaselineError(RuntimeError):
    """The trivial kernel could not be compiled or its symbols not listed."""


def trivial_source(target: str, suffix: str) -> Path:
    """The trivial kernel of ``target`` (``evals/targets/<target>/trivial<suffix>``)."""
    return target_folder(target).file(f"trivial{suffix}")


def baseline_symbols(
    cmd: CompileCommand, trivial: Path, cache_root: Path, lister: Callable[[Path], list[str]]
) -> frozenset[str]:
    """Undefined symbols of ``trivial`` compiled with ``cmd``, cached under ``cache_root``.

    Args:
        cmd: The candidate's compile command.
        trivial: The target's trivial kernel.
        cache_root: The build cache holding the candidate's build.
        lister: ``undefined_symbols(path) -> list[str]`` (the symbol check's own lister).

    Raises:
        BaselineError: The trivial kernel did not compile.
    """
    source = trivial.read_bytes()
    record = _record_path(cmd, source, cache_root)
    root = record.parent
    with locked(root.with_suffix(".lock")):
        if record.is_file():
            return frozenset(json.loads(record.read_text()))
        root.mkdir(parents=True, exist_ok=True)
        src = root / f"trivial{trivial.suffix}"
        src.write_bytes(source)
        obj = root / "trivial.o"
        try:
            proc = subprocess.run(
                cmd.compile_argv(src, obj),
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise BaselineError(f"cannot compile the trivial kernel: {exc}") from exc
        if proc.returncode != 0 or not obj.is_file():
            tail = " ".join((proc.stdout + proc.stderr).split()[-40:])
            raise BaselineError(f"the trivial kernel did not compile: {tail}")
        symbols = sorted(set(lister(obj)))
        record.write_text(json.dumps(symbols))
        return frozenset(symbols)


def store_baseline(
    cmd: CompileCommand, trivial: Path, cache_root: Path, symbols: list[str]
) -> None:
    """Record ``symbols`` as the baseline of ``cmd`` unless one is recorded already.

    For a trivial kernel built ahead (beside the candidate's build) with a command whose
    identity equals the candidate's: :func:`baseline_symbols` then finds it and compiles
    nothing.
    """
    record = _record_path(cmd, trivial.read_bytes(), cache_root)
    with locked(record.parent.with_suffix(".lock")):
        if not record.is_file():
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(sorted(set(symbols))))


def _record_path(cmd: CompileCommand, source: bytes, cache_root: Path) -> Path:
    key = hashlib.sha256(cmd.identity().encode() + b"\0" + source).hexdigest()[:24]
    return cache_root / f"baseline-{key}" / "symbols.json"
