"""The exact compiler command that built a candidate, read back from its ``build.ninja``.

``torch.utils.cpp_extension`` writes a ninja file into the build directory beside the library;
its variables (``cxx``, ``cflags``, ``nvcc``, ``cuda_cflags``, ...) and the ``compile`` or
``cuda_compile`` edge are the compiler, flags and source of the candidate's object. The
include and symbol checks rerun that command (preprocess only, or on a trivial source) so
they judge what the same compiler with the same flags does, not what the source text says.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_VARIABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_EDGE = re.compile(r"^build\s+(\S+):\s*(compile|cuda_compile)\s+(\S+)\s*$")
_EXTENSION_NAME = re.compile(r"-DTORCH_EXTENSION_NAME=\S+")


@dataclass(frozen=True)
class CompileCommand:
    """How one candidate object was compiled.

    Attributes:
        compiler: The compiler executable (``c++`` or ``nvcc``).
        flags: Flags before the source (``cflags`` or ``cuda_cflags``).
        post_flags: Flags after the output (``post_cflags`` or ``cuda_post_cflags``).
        source: The compiled source file.
        cuda: Whether the object came from nvcc.
    """

    compiler: str
    flags: tuple[str, ...]
    post_flags: tuple[str, ...]
    source: Path
    cuda: bool

    def compile_argv(self, source: Path, output: Path) -> list[str]:
        """The command compiling ``source`` to the object ``output`` with the same flags."""
        return [self.compiler, *self.flags, "-c", str(source), "-o", str(output), *self.post_flags]

    def identity(self) -> str:
        """The command without what differs between candidates (the extension's name)."""
        flags = [_EXTENSION_NAME.sub("-DTORCH_EXTENSION_NAME=baseline", f) for f in self.flags]
        return shlex.join([self.compiler, *flags, "|", *self.post_flags])


def read_compile_command(build_dir: Path) -> CompileCommand | None:
    """The candidate's compile command from ``build_dir/build.ninja``, or None if absent."""
    ninja = build_dir / "build.ninja"
    if not ninja.is_file():
        return None
    variables: dict[str, str] = {}
    edge: tuple[str, str] | None = None
    for line in ninja.read_text().splitlines():
        if line.startswith((" ", "\t")):
            continue  # rule bodies
        if match := _EDGE.match(line):
            edge = (match.group(2), match.group(3))
        elif match := _VARIABLE.match(line):
            variables[match.group(1)] = match.group(2)
    if edge is None:
        return None
    rule, source = edge
    cuda = rule == "cuda_compile"
    prefix = "cuda_" if cuda else ""
    compiler = variables.get("nvcc" if cuda else "cxx", "")
    if not compiler:
        return None
    return CompileCommand(
        compiler=compiler,
        flags=tuple(shlex.split(variables.get(f"{prefix}cflags", ""))),
        post_flags=tuple(shlex.split(variables.get(f"{prefix}post_cflags", ""))),
        source=Path(source.replace("$ ", " ")),
        cuda=cuda,
    )
