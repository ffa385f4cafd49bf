"""Write confinement for the candidate's worker: Landlock, so files change only in one folder.

Seccomp filters system calls by number and by the arguments held in registers; it cannot
tell one path from another. Landlock (Linux 5.13 and later, no privilege needed) can: once a
process restricts itself, it and every thread it starts later may create, write, truncate,
rename or remove files only beneath the folders (and write only to the device files) a rule
names. The worker applies it at its start, before torch starts a thread, with one rule for
its private fresh folder (the profiler's trace export, temporary files), one for its own
``/proc`` entries (the CUDA driver writes there as it initialises) and rules for the device
files the CUDA driver writes to; the build cache, the installed packages (a ``.pth``
file would run in every later Python process), the harness and everything else stay as they
were. Reading is not restricted. Where the kernel lacks Landlock the record says so and the
parent's footprint check (:mod:`evals.harness.sandbox.footprint`) is what remains.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import struct
from collections.abc import Sequence

__all__ = ["available_abi", "restrict_writes"]

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
"""landlock_create_ruleset, landlock_add_rule, landlock_restrict_self."""
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

_WRITE_FILE = 1 << 1
_DIR_CHANGES = sum(1 << bit for bit in range(4, 13))  # remove dir/file, make char/dir/reg/...
_REFER = 1 << 13  # ABI 2: renames and links across folders
_TRUNCATE = 1 << 14  # ABI 3

DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/nvidia*", "/dev/nvidia-caps/*")
"""Device files a worker may open for writing (CUDA's control and memory devices)."""


def _handled(abi: int) -> int:
    """Every right that changes the file system, as far as this kernel's ABI knows them."""
    rights = _WRITE_FILE | _DIR_CHANGES
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def available_abi() -> int:
    """The Landlock ABI this kernel offers (0: none), asked without restricting anything."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(0, int(libc.syscall(numbers[0], None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)))


def restrict_writes(folders: Sequence[str], devices: Sequence[str] = DEVICE_FILES) -> str:
    """Confine this process's file changes to ``folders`` and writes to ``devices`` (globs).

    Irreversible; threads that already exist keep their freedom, so call it before any
    starts (the record names how many there were). Never raises.

    Returns:
        ``"active: ..."`` or ``"unavailable: why"``.
    """
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return f"unavailable: no Landlock system calls known for {platform.machine()}"
    create, add_rule, restrict = numbers
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = available_abi()
    if abi < 1:
        return "unavailable: this kernel has no Landlock"
    handled = _handled(abi)
    attr = ctypes.create_string_buffer(struct.pack("=Q", handled))
    ruleset = libc.syscall(create, attr, ctypes.c_size_t(8), 0)
    if ruleset < 0:
        return f"unavailable: landlock_create_ruleset failed ({os.strerror(ctypes.get_errno())})"
    try:
        paths = [(f, handled) for f in folders]
        paths += [(d, _WRITE_FILE | (handled & _TRUNCATE)) for p in devices for d in glob.glob(p)]
        for path, rights in paths:
            _add(libc, add_rule, ruleset, path, rights)
        if libc.syscall(restrict, ruleset, 0) != 0:
            why = os.strerror(ctypes.get_errno())
            return f"unavailable: landlock_restrict_self failed ({why})"
    except OSError as exc:
        return f"unavailable: {exc}"
    finally:
        os.close(ruleset)
    threads = len(os.listdir("/proc/self/task"))
    earlier = f"; {threads - 1} thread(s) predate it" if threads > 1 else ""
    where = ", ".join(folders) or "nowhere"
    return f"active (Landlock ABI {abi}): files change only under {where}{earlier}"


def _add(libc: ctypes.CDLL, add_rule: int, ruleset: int, path: str, rights: int) -> None:
    """One path-beneath rule: ``rights`` on ``path`` and below (a file: the file itself)."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd))
        if libc.syscall(add_rule, ruleset, _RULE_PATH_BENEATH, attr, 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
    finally:
        os.close(fd)
