"""What crosses a harness relay (:mod:`evals.bench.scoring.relays`), read and checked here.

In: a per-call nonce and, for the scorer relay, the kernel's bytes. Out, on its stdout: the
harness's table, then the nonce and the verdict; the scorer relay adds report lines of its
own (``<nonce>:relay:<json>``). A verdict counts only once :func:`check_verdict` accepts it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from evals.bench.scoring.relays import RELAY_NOTE
from evals.harness.failures import one_line
from evals.harness.verdict.record import EXIT_STATUS, VERDICT_SCHEMA, Verdict

__all__ = ["check_verdict", "relay_input", "split_notes", "split_output"]

REQUIRED_KEYS = ("schema", "command", "kernel", "status", "scenarios", "aggregates")


def relay_input(nonce: str, kernel: bytes | None) -> str:
    """The relay's stdin: the nonce, then (scorer relay) the kernel's bytes in base64."""
    if kernel is None:
        return nonce + "\n"
    return f"{nonce}\n{base64.b64encode(kernel).decode('ascii')}\n"


def split_notes(stdout: str, nonce: str) -> tuple[str, dict[str, Any]]:
    """Take the scorer relay's report lines (``<nonce>:relay:<json>``) out of its stdout."""
    marker = nonce + RELAY_NOTE
    lines, notes = [], {}
    for line in stdout.split("\n"):
        if not line.startswith(marker):
            lines.append(line)
            continue
        try:
            found = json.loads(line[len(marker) :])
        except ValueError:
            continue
        if isinstance(found, dict):
            notes.update(found)
    return "\n".join(lines), notes


def split_output(stdout: str, nonce: str) -> tuple[str, str | None]:
    """Split the relay's stdout into the table and the verdict text after the last nonce."""
    marker = f"\n{nonce}\n"
    head, sep, tail = stdout.rpartition(marker)
    if not sep:
        return stdout.strip(), None
    return head.strip(), tail.strip() or None


def check_verdict(
    text: str | None, *, returncode: int, command: str, kernel_sha256: str
) -> tuple[Verdict | None, str | None]:
    """Parse and check a verdict; returns (verdict, None) or (None, one-line reason).

    The text is read through :meth:`Verdict.from_json` (a verdict it cannot read is rejected
    with its reason), then its command, its status (against the exit status) and its kernel's
    hash are checked.
    """
    if text is None:
        return None, f"the harness wrote no verdict (exit status {returncode})"
    try:
        raw = json.loads(text)
    except ValueError as exc:
        return None, f"the verdict is not JSON: {exc}"
    if not isinstance(raw, dict) or any(k not in raw for k in REQUIRED_KEYS):
        return None, f"the verdict lacks one of {', '.join(REQUIRED_KEYS)}"
    if raw["schema"] != VERDICT_SCHEMA:
        return None, f"verdict schema {raw['schema']!r} is not {VERDICT_SCHEMA}"
    try:
        verdict = Verdict.from_json(raw)
    except ValueError as exc:
        return None, one_line(str(exc))
    if verdict.command != command:
        return None, f"verdict of {verdict.command!r}, expected {command!r}"
    if EXIT_STATUS.get(verdict.status) != returncode:
        return None, f"exit status {returncode} disagrees with verdict status {verdict.status!r}"
    found = verdict.kernel.get("sha256")
    if found != kernel_sha256:
        return None, f"the verdict is for kernel {str(found)[:12]}, not {kernel_sha256[:12]}"
    return verdict, None
