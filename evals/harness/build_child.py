"""Child process that compiles one candidate with ``torch.utils.cpp_extension.load``.

Run by :mod:`evals.harness.build`; prints the compiler output, then ``BUILD-OK`` on success,
or a :data:`COMPILER_FAILED` line when the compiler itself rejected the source: only such a
failure is the candidate's (and cached); any other (no compiler, a missing module) is the
environment's and is never cached.
"""

from __future__ import annotations

import json
import sys

from evals.harness.build_protocol import COMPILER_FAILED

_COMPILER_ERROR = "Error building extension"  # torch.utils.cpp_extension, after ninja fails


def main(argv: list[str]) -> int:
    """Compile the candidate described by the JSON spec in ``argv[1]``."""
    spec = json.loads(argv[1])
    from torch.utils import cpp_extension

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
    except Exception as exc:  # the compiler's own output is already on stdout
        print(f"{type(exc).__name__}: {exc}", flush=True)
        if str(exc).startswith(_COMPILER_ERROR):
            print(COMPILER_FAILED, flush=True)
        return 1
    print("BUILD-OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
