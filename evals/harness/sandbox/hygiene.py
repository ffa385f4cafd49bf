"""Sandbox hygiene for ``score``.

A clean environment for the candidate's processes, a private build cache, and a check of the
harness's own files against the hashes recorded at install.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import evals
from evals.harness.failures import Code, Failure

KEPT_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "TERM",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",  # with an index in CUDA_VISIBLE_DEVICES: the same GPU everywhere
        "NVIDIA_VISIBLE_DEVICES",
        "NCCL_NVLS_ENABLE",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST",
        "NVSHMEM_DISABLE_NVLS",
        "KERNELSEEK_CACHE",
        "KERNELSEEK_FA4_ARCH",  # the architecture fa4_blackwell builds for: one in every process
        "TORCH_CUDA_ARCH_LIST",
        "CUDA_HOME",
        "MAX_JOBS",
        "CC",
        "CXX",
    }
)
"""Everything else is dropped for ``score``: LD_PRELOAD, PYTHON*, other CUDA_*, ...
``LD_LIBRARY_PATH`` keeps only system folders (GPU hosts find the driver through it), never
the working directory or the temp folder, where an agent could plant a library."""

DEFAULT_HASH_FILES = (Path("/opt/kernelseek/INSTALL_HASHES.txt"),)


def package_root() -> str:
    """The folder holding the ``evals`` package (children must import it from there)."""
    return str(Path(evals.__file__).resolve().parent.parent)


def with_package_root(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the harness's own package folder last on ``PYTHONPATH``.

    Children (worker, build child) run with ``python -P``, so they find ``evals`` on a host
    where it is not installed only through this entry; it comes last, never ahead of what the
    caller put there.
    """
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root() not in paths:
        paths.append(package_root())
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment the worker and compiler get during ``score``.

    Python finds the harness and the upstreams through ``PYTHONPATH`` rebuilt from this
    process's own import path (absolute entries only), never from the caller's variables.
    """
    clean = {k: v for k, v in env.items() if k in KEPT_VARIABLES}
    libs = _system_dirs(env.get("LD_LIBRARY_PATH", ""))
    if libs:
        clean["LD_LIBRARY_PATH"] = libs
    cwd = os.getcwd()
    paths = [p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p) and p != cwd]
    # the harness's own package last: found even when this process found it in the working
    # folder (a checkout run with ``python -m``), never ahead of the installed packages
    clean["PYTHONPATH"] = os.pathsep.join([*paths, package_root()])
    clean["PYTHONNOUSERSITE"] = "1"
    return clean


def _system_dirs(path_list: str) -> str:
    """The entries of a path list that exist and lie outside the working and temp folders."""
    unsafe = [Path.cwd().resolve(), Path(tempfile.gettempdir()).resolve()]
    kept = []
    for entry in path_list.split(os.pathsep):
        p = Path(entry)
        if not entry or not p.is_absolute() or not p.is_dir():
            continue
        real = p.resolve()
        if not any(real == u or u in real.parents for u in unsafe):
            kept.append(entry)
    return os.pathsep.join(kept)


def hash_file() -> Path | None:
    """The install's hash list: ``$KERNELSEEK_INSTALL_HASHES`` or the container's default."""
    named = os.environ.get("KERNELSEEK_INSTALL_HASHES")
    if named:
        return Path(named)
    return next((p for p in DEFAULT_HASH_FILES if p.is_file()), None)


def verify_install(path: Path | None) -> Failure | None:
    """Compare the files listed in ``path`` (``sha256sum`` format) with their contents now."""
    if path is None:
        return None
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        return Failure(Code.HARNESS_MODIFIED, f"cannot read the install hashes {path}: {exc}")
    for line in lines:
        if not line.strip():
            continue
        expected, _, name = line.partition("  ")
        try:
            actual = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        except OSError:
            actual = "missing"
        if actual != expected.strip():
            return Failure(Code.HARNESS_MODIFIED, f"harness file changed since install: {name}")
    return None
