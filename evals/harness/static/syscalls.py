"""Raw system-call instructions in a candidate's objects.

Inline assembly reaches the kernel without any library call, so it leaves no undefined symbol
for the symbol check; the disassembly shows it. Every system call a kernel legitimately needs
(memory, threads for OpenMP) goes through libraries, which are judged by their symbols.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_SYSCALL = re.compile(r"\t(syscall|sysenter|int\s+\$0x80|svc\s)")
_TIMEOUT_S = 120.0


class DisassemblyError(RuntimeError):
    """objdump could not be run on an object."""


def syscall_instructions(obj: Path) -> list[str]:
    """Lines of ``obj``'s disassembly holding a system-call instruction (x86-64 or AArch64).

    Raises:
        DisassemblyError: objdump failed.
    """
    try:
        proc = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", "-C", str(obj)],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise DisassemblyError(f"cannot disassemble {obj.name}: {exc}") from exc
    if proc.returncode != 0:
        raise DisassemblyError(f"objdump failed on {obj.name}: {proc.stderr.strip()[:200]}")
    return [" ".join(line.split()) for line in proc.stdout.splitlines() if _SYSCALL.search(line)]
