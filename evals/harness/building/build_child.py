"""Child process that compiles and links one candidate, and never loads it.

Run by :mod:`evals.harness.building.build`. It confines itself first
(:mod:`evals.harness.sandbox.confine`: file changes only beneath the build's own folder, no sockets,
inherited by ninja, the compiler and the linker), then builds with
``torch.utils.cpp_extension.load``, whose last step would ``dlopen`` the library into this process
and run the candidate's static initialisers here, outside every sandbox: that step is replaced by
one that refuses, so the first ``dlopen`` of the candidate's library is in its confined worker.
Prints the compiler output, then ``BUILD-OK`` on success, or a :data:`COMPILER_FAILED` line when the
compiler rejected the source.
"""

from __future__ import annotations

import json
import sys

from evals.harness.building.build_protocol import BUILT, COMPILER_FAILED
from evals.harness.sandbox.confine import confine_tool

_COMPILER_ERROR = "Error building extension"  # torch.utils.cpp_extension, after ninja fails


class _Linked(Exception):
    """Raised where ``cpp_extension.load`` would load the linked library."""


def _refuse_load(path: str) -> None:
    raise _Linked(path)


def main(argv: list[str]) -> int:
    """Compile the candidate described by the JSON spec in ``argv[1]``."""
    spec = json.loads(argv[1])
    import torch
    from torch.utils import cpp_extension

    record = confine_tool(spec["writable"])
    print(f"{BUILT} confinement {json.dumps(record)}", flush=True)
    torch.ops.load_library = _refuse_load  # type: ignore[method-assign]
    try:
        cpp_extension.load(
            name=spec["name"],
            sources=[spec["source"]],
            extra_cflags=spec["extra_cflags"],
            extra_cuda_cflags=spec["extra_cuda_cflags"],
            extra_ldflags=spec["extra_ldflags"],
            build_directory=spec["build_directory"],
            with_cuda=spec["with_cuda"],
            is_python_module=False,
            verbose=True,
        )
    except _Linked:
        print(f"{BUILT} linked, not loaded", flush=True)
        return 0
    except Exception as exc:  # the compiler's own output is already on stdout
        print(f"{type(exc).__name__}: {exc}", flush=True)
        if str(exc).startswith(_COMPILER_ERROR):
            print(COMPILER_FAILED, flush=True)
        return 1
    print("the build returned without linking a library", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
