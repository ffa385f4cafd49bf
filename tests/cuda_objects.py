"""CUDA candidates compiled to objects on a host without a GPU, for the static checks.

The harness builds a candidate through ``torch.utils.cpp_extension``, which also links it
against torch's CUDA libraries; a CPU-only torch has none, so nothing links here. The static
checks only need the object and the command that compiled it (``build.ninja``): this compiles
the candidate with nvcc and the flags the CUDA build uses (torch's include paths, its nvcc
flags, the target's), and writes the ``build.ninja`` the checks read the command back from.
A CPU wheel of torch lacks one generated header of c10's CUDA library; a one-line stand-in is
added on the include path (it only says the library was built shared).
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

_MACROS = "c10/cuda/impl/cuda_cmake_macros.h"


def nvcc() -> str | None:
    """The nvcc on PATH, or None."""
    return shutil.which("nvcc")


needs_nvcc = pytest.mark.skipif(
    nvcc() is None or shutil.which("objdump") is None, reason="needs nvcc and objdump"
)
"""For tests that compile CUDA objects and read their symbols."""


def compile_candidate(source: Path, cache: Path, target: str = "fa3_hopper") -> Path:
    """Compile ``source`` as ``target``'s build would; the library path the checks expect.

    The returned ``<dir>/candidate.so`` does not exist: its folder holds ``build.ninja`` and
    ``candidate.o``, which is what the static checks read. Objects are cached by content.
    """
    import torch
    from torch.utils import cpp_extension

    from evals.harness.targets import get_target

    compiler = nvcc()
    assert compiler is not None, "needs nvcc"
    includes = list(cpp_extension.include_paths())
    if not any((Path(d) / _MACROS).is_file() for d in includes):
        shim = cache / "cuda-shim"
        (shim / _MACROS).parent.mkdir(parents=True, exist_ok=True)
        (shim / _MACROS).write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(str(shim))
    abi = int(torch.compiled_with_cxx11_abi())
    flags = [  # where cpp_extension's build.ninja puts them: cuda_cflags, then cuda_post_cflags
        "-DTORCH_EXTENSION_NAME=candidate",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        *[arg for d in includes for arg in ("-isystem", d)],
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
    ]
    target_flags = get_target(target).build.extra_cuda_cflags
    post = [*cpp_extension.COMMON_NVCC_FLAGS, "--compiler-options", "-fPIC", *target_flags]
    command = shlex.join([compiler, *flags, "|", *post])
    key = hashlib.sha256(source.read_bytes() + command.encode())
    build = cache / "cuda-objects" / key.hexdigest()[:24]
    obj = build / "candidate.o"
    if not obj.is_file():
        build.mkdir(parents=True, exist_ok=True)
        src = build / f"candidate{source.suffix}"
        src.write_bytes(source.read_bytes())
        part = build / "candidate.part"  # renamed once build.ninja is beside it
        proc = subprocess.run(
            [compiler, *flags, "-c", str(src), "-o", str(part), *post],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (build / "build.ninja").write_text(
            f"nvcc = {compiler}\ncuda_cflags = {shlex.join(flags)}\n"
            f"cuda_post_cflags = {shlex.join(post)}\n"
            "rule cuda_compile\n  command = $nvcc $cuda_cflags -c $in -o $out $cuda_post_cflags\n"
            f"build candidate.o: cuda_compile {src}\n"
        )
        part.rename(obj)
    return build / "candidate.so"
