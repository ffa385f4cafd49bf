"""Where a CUDA candidate's build finds the driver library it links against (``-lcuda``).

A GPU candidate may call the driver's TMA tensor-map encoders (``cuTensorMapEncodeTiled``, ...;
the symbol check allows those and no other driver function, see
:mod:`evals.harness.static.symbol_rules`), so its library is linked against ``libcuda.so.1``. In the
worker the driver is already loaded (torch's CUDA context) and the candidate's dependency
resolves to it by name. At build time the installed driver is preferred; where none is
installed, the toolkit's link stub (``$CUDA_HOME/lib64/stubs/libcuda.so``) stands in; where
neither is found nothing is linked, and a candidate that calls a driver function fails to load
with the function's name (kernels that call none build and load as before).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

_DRIVER = "libcuda.so.1"
_DRIVER_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib/wsl/lib",
)
_STUB_DIRS = (
    "lib64/stubs",
    "lib/stubs",
    "targets/x86_64-linux/lib/stubs",
    "targets/sbsa-linux/lib/stubs",
)


@functools.cache
def driver_link_flags() -> tuple[str, ...]:
    """Linker flags that add the CUDA driver library as a dependency, or () if none is found."""
    driver = installed_driver()
    if driver is not None:
        return (str(driver),)  # a file operand: the dependency is its soname, libcuda.so.1
    stub = toolkit_stub()
    if stub is not None:
        return (f"-L{stub.parent}", "-lcuda")
    return ()


def installed_driver() -> Path | None:
    """The installed ``libcuda.so.1``, or None on a host without the driver.

    Looked for on ``LD_LIBRARY_PATH``, in the loader's cache, then in the usual directories.
    """
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    cached = _loader_cache_entry()
    if cached is not None:
        dirs.append(str(cached.parent))
    for d in [*dirs, *_DRIVER_DIRS]:
        path = Path(d) / _DRIVER
        if _is_elf64(path):
            return path
    return None


def toolkit_stub() -> Path | None:
    """The CUDA toolkit's link stub ``libcuda.so``, or None."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        for sub in _STUB_DIRS:
            path = Path(home) / sub / "libcuda.so"
            if _is_elf64(path):
                return path
    return None


def _is_elf64(path: Path) -> bool:
    """Whether ``path`` is a 64-bit ELF file.

    A 32-bit driver of a multilib install, or a broken link, would fail every build's link step.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(5)
    except OSError:
        return False
    return head == b"\x7fELF\x02"


def _loader_cache_entry() -> Path | None:
    """``libcuda.so.1``'s path as the dynamic loader's cache (``ldconfig -p``) lists it."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        name, _, path = line.strip().partition(" => ")
        # "libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"; not the
        # 32-bit "(libc6)" entry a multilib driver install also lists
        if name.startswith(_DRIVER + " ") and "64)" in name and path:
            return Path(path)
    return None
