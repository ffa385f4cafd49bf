"""Running the harness inside the sample's sandbox, with the verdict on the harness's own channel.

The harness runs under a small relay (:data:`RELAY`): it writes the verdict into a directory it
creates itself (``mkdtemp``: a fresh, private name no one could have prepared), reads it back,
removes the directory and prints the verdict on stdout after a per-call nonce that arrives on
stdin. Nothing is read from the agent's workspace, so a planted or stale ``score.json`` and a
blocked temporary path are never taken for a verdict. Each verdict is then checked: the exit
status agrees with the verdict's status, the schema is the harness's, and ``kernel.sha256`` is
the hash of the kernel the caller read before the run.

A GPU target in the local sandbox runs on a GPU leased from the host's pool
(:mod:`evals.bench.gpu_pool`): concurrent samples each get their own GPU while there are free
ones, named to the harness by ``CUDA_VISIBLE_DEVICES``, then share the least-leased ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from inspect_ai.log import transcript
from inspect_ai.util import sandbox, store

from evals.bench.faults import ENVIRONMENT, HARNESS, verdict_fault
from evals.bench.gpu_pool import Gpu, PoolBusyError, gpu_lease_async
from evals.bench.run_cost import EVENT_KEY, RunCost
from evals.bench.settings import TaskSettings
from evals.bench.targets import bench_target

RESULTS_DIR = ".kernelseek"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this `evals`
VERDICT_SCHEMA = "kernelseek.verdict/1"
LAST_VERDICT_KEY = "kernelseek:last_verdict"
EXIT_STATUS = {"ok": 0, "failed": 1, "error": 2}
REQUIRED_KEYS = ("schema", "command", "kernel", "status", "scenarios", "aggregates")

# Runs inside the sandbox (stdlib and the harness only: the image may lack inspect_ai).
RELAY = """
import os, shutil, sys, tempfile
nonce = sys.stdin.readline().strip()
from evals.harness.cli import main
d = tempfile.mkdtemp(prefix="kernelseek-verdict-")
try:
    path = os.path.join(d, "verdict.json")
    rc = main(sys.argv[1:] + ["--json", path])
    body = open(path).read() if os.path.isfile(path) else ""
finally:
    shutil.rmtree(d, ignore_errors=True)
sys.stdout.write("\\n" + nonce + "\\n" + body.replace("\\n", " ") + "\\n")
sys.stdout.flush()
sys.exit(rc)
"""


@dataclass(frozen=True)
class HarnessRun:
    """One harness invocation: its exit status, table, and verdict (None if rejected).

    Attributes:
        returncode: The harness's exit status (-1: it did not finish).
        table: The harness's table (stdout without the verdict).
        verdict: The checked verdict, or None.
        error: Why there is no verdict (one line), or None.
        kernel_sha256: Hash of the kernel file read just before the run.
        fault: Set when the run failed for a reason not the candidate's (the environment's
            or the harness's): the reason with its prefix (:mod:`evals.bench.faults`).
        gpu: The GPU leased for the run (its UUID, else its index; :mod:`evals.bench.gpu_pool`),
            or None when none was (not a GPU target, not the local sandbox, an empty pool).
    """

    returncode: int
    table: str
    verdict: dict[str, Any] | None
    error: str | None = None
    kernel_sha256: str | None = None
    fault: str | None = None
    gpu: str | None = None

    @property
    def ok(self) -> bool:
        """Every scenario correct."""
        return self.returncode == 0 and self.verdict is not None


def split_output(stdout: str, nonce: str) -> tuple[str, str | None]:
    """Split the relay's stdout into the table and the verdict text after the last nonce."""
    marker = f"\n{nonce}\n"
    head, sep, tail = stdout.rpartition(marker)
    if not sep:
        return stdout.strip(), None
    return head.strip(), tail.strip() or None


def check_verdict(
    text: str | None, *, returncode: int, command: str, kernel_sha256: str
) -> tuple[dict[str, Any] | None, str | None]:
    """Parse and check a verdict; returns (verdict, None) or (None, one-line reason)."""
    if text is None:
        return None, f"the harness wrote no verdict (exit status {returncode})"
    try:
        verdict = json.loads(text)
    except ValueError as exc:
        return None, f"the verdict is not JSON: {exc}"
    if not isinstance(verdict, dict) or any(k not in verdict for k in REQUIRED_KEYS):
        return None, f"the verdict lacks one of {', '.join(REQUIRED_KEYS)}"
    if verdict["schema"] != VERDICT_SCHEMA:
        return None, f"verdict schema {verdict['schema']!r} is not {VERDICT_SCHEMA}"
    if verdict["command"] != command:
        return None, f"verdict of {verdict['command']!r}, expected {command!r}"
    if EXIT_STATUS.get(verdict["status"]) != returncode:
        return None, f"exit status {returncode} disagrees with verdict status {verdict['status']!r}"
    found = (verdict.get("kernel") or {}).get("sha256")
    if found != kernel_sha256:
        return None, f"the verdict is for kernel {str(found)[:12]}, not {kernel_sha256[:12]}"
    return verdict, None


def last_verdict(command: Literal["check", "bench", "score"]) -> dict[str, Any] | None:
    """The checked verdict of this sample's last ``command`` run, or None."""
    verdicts: dict[str, Any] = store().get(LAST_VERDICT_KEY, {})
    found: dict[str, Any] | None = verdicts.get(command)
    return found


def remember(command: Literal["check", "bench", "score"], verdict: dict[str, Any] | None) -> None:
    """Keep ``verdict`` as this sample's last ``command`` verdict (None: the last run had none)."""
    verdicts: dict[str, Any] = store().get(LAST_VERDICT_KEY, {})
    store().set(LAST_VERDICT_KEY, {**verdicts, command: verdict})


async def read_verdict(command: Literal["check", "bench", "score"]) -> dict[str, Any] | None:
    """The verdict of the last ``command`` tool call (kept by the scorer side, not the agent's)."""
    return last_verdict(command)


def harness_env(settings: TaskSettings, gpu: Gpu | None = None) -> dict[str, str] | None:
    """In the local sandbox, the harness imports the same ``evals`` as the Inspect process.

    (Without it, ``-P`` resolves ``evals`` through site-packages, which may be another
    checkout's editable install.) Container sandboxes use their image's install. A leased
    ``gpu`` is the only one the harness sees (``CUDA_VISIBLE_DEVICES``).
    """
    if settings.sandbox != "local":
        return None
    paths = [str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(paths), **(gpu.env() if gpu is not None else {})}


def leases_gpu(settings: TaskSettings) -> bool:
    """Whether the harness runs on a GPU leased from the pool: a GPU target, local sandbox.

    Container sandboxes get their GPU from the scheduler or the engine: k8s gives each sample's
    pod its own (``nvidia.com/gpu: 1``); Docker maps the compose files' ``count: 1`` to GPU 0
    in every container (pin others with ``device_ids``).
    """
    return settings.sandbox == "local" and bench_target(settings.target).device == "gpu"


def _note(event: str | dict[str, Any]) -> None:
    """Log a lease (which GPU a run got) or a wait for one into the sample's transcript."""
    transcript().info({"gpu_pool": event}, source="kernelseek")


def harness_argv(
    settings: TaskSettings, command: Literal["check", "bench", "score"], suite: str
) -> list[str]:
    """The sandbox command line: the relay, then the harness's own arguments."""
    python = settings.harness_command()[0]
    return [
        *(python, "-P", "-c", RELAY),
        *(command, "--target", settings.target, "--kernel", settings.kernel_file),
        *("--suite", suite, "--quiet"),
    ]


async def _read_kernel(settings: TaskSettings) -> bytes | HarnessRun:
    """The workspace kernel's bytes, or the run that failed to read it."""
    try:
        source: bytes = await sandbox().read_file(settings.kernel_file, text=False)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        # the workspace is the agent's: a kernel it removed or locked is the candidate's failure
        lost = f"cannot read the kernel {settings.kernel_file}: {type(exc).__name__}"
        return HarnessRun(-1, "", None, lost)
    except Exception as exc:
        broken = f"cannot read {settings.kernel_file}: {type(exc).__name__}: {exc}"
        return HarnessRun(-1, "", None, broken, fault=f"{ENVIRONMENT} {broken}")
    return source


async def run_harness(
    settings: TaskSettings,
    command: Literal["check", "bench", "score"],
    *,
    suite: str,
    timeout: int,
) -> HarnessRun:
    """Run the harness's ``command`` on the workspace kernel and check its verdict; never raises."""
    remember(command, None)  # a run without a verdict leaves none behind, never a stale one
    source = await _read_kernel(settings)
    if isinstance(source, HarnessRun):
        return source
    sha = hashlib.sha256(source).hexdigest()
    if not leases_gpu(settings):
        run = await _exec(settings, command, suite=suite, timeout=timeout, sha=sha, gpu=None)
    else:
        run = await _on_leased_gpu(settings, command, suite=suite, timeout=timeout, sha=sha)
    cost = RunCost.from_verdict(command, run.verdict, gpu=run.gpu)
    transcript().info({EVENT_KEY: cost.to_json()}, source="kernelseek")
    return run


async def _on_leased_gpu(
    settings: TaskSettings,
    command: Literal["check", "bench", "score"],
    *,
    suite: str,
    timeout: int,
    sha: str,
) -> HarnessRun:
    """:func:`_exec` on a GPU leased from the host's pool; never raises."""
    what = f"{command} {settings.target} (pid {os.getpid()})"
    try:  # waits at most `timeout` for a GPU, then the run gets its own `timeout`
        async with gpu_lease_async(what=what, timeout_s=timeout, notify=_note) as gpu:
            if gpu is not None:
                _note({"command": command, "index": gpu.index, "uuid": gpu.uuid})
            run = await _exec(settings, command, suite=suite, timeout=timeout, sha=sha, gpu=gpu)
    except (PoolBusyError, OSError, ValueError) as exc:  # a pool it cannot use is the machine's
        busy = f"no GPU leased: {type(exc).__name__}: {exc}"
        return HarnessRun(-1, "", None, busy, sha, f"{ENVIRONMENT} {busy}")
    return run if gpu is None else replace(run, gpu=gpu.uuid or str(gpu.index))


async def _exec(
    settings: TaskSettings,
    command: Literal["check", "bench", "score"],
    *,
    suite: str,
    timeout: int,
    sha: str,
    gpu: Gpu | None,
) -> HarnessRun:
    """Run the harness in the sandbox (on ``gpu`` when one is leased); never raises."""
    nonce = f"KERNELSEEK-VERDICT-{secrets.token_hex(16)}"
    try:
        result = await sandbox().exec(
            harness_argv(settings, command, suite),
            input=nonce + "\n",
            env=harness_env(settings, gpu),
            timeout=timeout,
        )
    except TimeoutError:  # every request of the candidate has its own, shorter, limit
        late = f"the harness did not finish within {timeout} s"
        return HarnessRun(-1, "", None, late, sha, f"{HARNESS} {late}")
    except Exception as exc:  # a broken sandbox must not crash the tool; the scorer errors
        broken = f"sandbox error: {type(exc).__name__}: {exc}"
        return HarnessRun(-1, "", None, broken, sha, f"{ENVIRONMENT} {broken}")
    table, text = split_output(result.stdout or "", nonce)
    verdict, reason = check_verdict(
        text, returncode=result.returncode, command=command, kernel_sha256=sha
    )
    if verdict is None:
        tail = (result.stderr or "").strip().splitlines()[-3:]
        said = f"; harness said: {' | '.join(tail)}" if tail else ""
        error = f"{reason}{said}"
        return HarnessRun(result.returncode, table, None, error, sha, f"{HARNESS} {error}")
    remember(command, verdict)
    return HarnessRun(result.returncode, table, verdict, None, sha, verdict_fault(verdict))
