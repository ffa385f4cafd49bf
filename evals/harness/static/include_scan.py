"""The headers a candidate really includes, as the preprocessor of its own build sees them.

A check of literal ``#include <...>`` lines misses every other spelling the preprocessor
accepts (a macro naming the header, digraphs, line splices, ``#include_next``, a header
reached through a path). Here the candidate's compile command is rerun with ``-E -H -v``:
``-v`` prints the search path, ``-H`` every header opened, one dot per nesting level. The
headers at depth one are the candidate's own includes; each is spelled relative to the
deepest search directory holding it (``/usr/include/c++/12/thread`` is ``thread``), and a
header outside every search directory keeps its full path, which no allow-list pattern
matches. nvcc is asked (``-dryrun``) for its preprocessing commands, host and device pass
alike, and each is rerun the same way.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evals.harness.building.compile_command import CompileCommand
from evals.harness.sandbox.confine import confined_argv
from evals.harness.sandbox.hygiene import with_package_root

_TIMEOUT_S = 120.0
_SEARCH_START = "#include <...> search starts here:"
_SEARCH_END = "End of search list."
_DRYRUN_LINE = re.compile(r"^#\$ (.*)$")


class ScanError(RuntimeError):
    """The preprocessor could not be run or its output not read."""


def preprocess_commands(cmd: CompileCommand) -> list[list[str]]:
    """Commands that preprocess the candidate and print its search path and header tree."""
    if not cmd.cuda:
        argv = [cmd.compiler, *cmd.flags, "-E", "-H", "-v", str(cmd.source), "-o", os.devnull]
        return [[*argv, *cmd.post_flags]]
    dry = _run([cmd.compiler, "-dryrun", *cmd.compile_argv(cmd.source, Path("scan.o"))[1:]])
    commands = []
    for line in dry.splitlines():
        match = _DRYRUN_LINE.match(line.strip())
        if not match:
            continue
        argv = shlex.split(match.group(1))
        if argv and "=" not in argv[0] and "-E" in argv:
            commands.append([*_to_devnull(argv), "-H", "-v"])
    if not commands:
        raise ScanError("nvcc -dryrun listed no preprocessing command")
    return commands


def _to_devnull(argv: list[str]) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "-o":
            out[i + 1] = os.devnull
    return out


def _run(argv: list[str]) -> str:
    """Run ``argv``; its stderr (where ``-H``, ``-v`` and ``-dryrun`` write).

    Confined (:mod:`evals.harness.sandbox.confine`): it reads the candidate's source, and writes
    only to a private temporary folder.
    """
    try:
        with tempfile.TemporaryDirectory(prefix="kernelseek-scan-") as tmp:
            proc = subprocess.run(
                confined_argv([tmp], argv),
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                env={**with_package_root(os.environ), "TMPDIR": tmp},
                start_new_session=True,
            )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ScanError(f"cannot run the preprocessor: {exc}") from exc
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.split()[-30:])
        raise ScanError(f"the preprocessor failed (exit {proc.returncode}): {tail}")
    return proc.stderr


def parse_header_tree(stderr: str) -> tuple[list[Path], list[Path]]:
    """Search directories and depth-one headers from ``-v -H`` output, in order."""
    dirs: list[Path] = []
    direct: list[Path] = []
    in_search = False
    for line in stderr.splitlines():
        if line.startswith(_SEARCH_START):
            in_search = True
        elif line.startswith(_SEARCH_END):
            in_search = False
        elif in_search and line.startswith(" "):
            dirs.append(Path(os.path.realpath(line.strip())))
        elif line.startswith(". "):
            direct.append(Path(os.path.realpath(line[2:].strip())))
    return dirs, direct


def spell(header: Path, dirs: Iterable[Path]) -> str:
    """``header`` relative to the deepest search directory holding it, else its full path."""
    best: str | None = None
    for d in dirs:
        if header.is_relative_to(d):
            rel = header.relative_to(d).as_posix()
            best = rel if best is None or len(rel) < len(best) else best
    return best if best is not None else header.as_posix()


def included_headers(cmd: CompileCommand) -> list[str]:
    """Every header the candidate includes directly, spelled as an include would name it.

    Raises:
        ScanError: The preprocessor could not be run.
    """
    commands = preprocess_commands(cmd)
    # the host and device passes are independent: run them side by side
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        outputs = list(pool.map(_run, commands))
    spelled: list[str] = []
    for stderr in outputs:
        dirs, direct = parse_header_tree(stderr)
        for header in direct:
            name = spell(header, dirs)
            if name not in spelled:
                spelled.append(name)
    return spelled
