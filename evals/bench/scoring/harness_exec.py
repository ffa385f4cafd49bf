"""Running the harness inside the sample's sandbox, with the verdict on the harness's own channel.

The harness runs under a small relay (:data:`evals.bench.scoring.relays.RELAY`): it writes the
verdict into a directory it creates itself (``mkdtemp``: a fresh, private name no one could have
prepared), reads it back, removes the directory and prints the verdict on stdout after a
per-call nonce that arrives on stdin. Nothing is read from the agent's workspace, so a planted or
stale ``score.json`` and a blocked temporary path are never taken for a verdict. Each verdict is
then checked: the exit status agrees with the verdict's status, the schema is the harness's, and
``kernel.sha256`` is the hash of the kernel the caller read before the run.

In a container sandbox (``docker``, ``k8s``) the harness never runs where the agent does: the
kernel's bytes are read from the agent's sandbox (``default``) and handed on stdin to another
relay (:data:`evals.bench.scoring.relays.SCORER_RELAY`) in the sandbox's ``scorer`` service, a
container of the same image run as another user (``harness``, uid 1001) with a read-only root
file system, which the agent never runs a command in. Only the kernel's bytes go in; the
verdict and the table come back on its stdout. Runs of one sample are serialised, and before
each one the relay kills every process an earlier run left in that container (before ``score``
it also empties what the harness user can write). A sandbox without that service fails every
run with one line (an ``environment:`` fault), never falling back to the agent's container. The
local sandbox cannot separate the two, and runs the harness where the agent works, as before.

A GPU target in the local sandbox runs on a GPU leased from the host's pool
(:mod:`evals.bench.scoring.gpu_pool`): concurrent samples each get their own GPU while there
are free ones, named to the harness by ``CUDA_VISIBLE_DEVICES``, then share the least-leased ones.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import anyio
from inspect_ai.log import transcript
from inspect_ai.util import SandboxEnvironment, sandbox

from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import bench_target
from evals.bench.scoring.faults import ENVIRONMENT, HARNESS, verdict_fault
from evals.bench.scoring.gpu_pool import Gpu, PoolBusyError, gpu_lease_async
from evals.bench.scoring.relay_io import check_verdict, relay_input, split_notes, split_output
from evals.bench.scoring.relays import RELAY, SCORER_RELAY, SCORER_SERVICE
from evals.bench.scoring.run_cost import EVENT_KEY, RunCost
from evals.bench.scoring.verdict_store import remember
from evals.harness.failures import one_line
from evals.harness.verdict.record import Verdict

RESULTS_DIR = ".kernelseek"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this `evals`


@dataclass(frozen=True)
class HarnessRun:
    """One harness invocation: its exit status, table, and verdict (None if rejected).

    Attributes:
        returncode: The harness's exit status (-1: it did not finish).
        table: The harness's table (stdout without the verdict).
        verdict: The checked verdict, read into its typed record, or None.
        error: Why there is no verdict (one line), or None.
        kernel_sha256: Hash of the kernel file read just before the run.
        fault: Set when the run failed for a reason not the candidate's (the environment's
            or the harness's): the reason with its prefix (:mod:`evals.bench.scoring.faults`).
        gpu: The GPU leased for the run (its UUID, else its index;
            :mod:`evals.bench.scoring.gpu_pool`), or None when none was (not a GPU target,
            not the local sandbox, an empty pool).
        cleanup: In the scorer container, what its relay found and cleared (``before``: the
            processes an earlier run left, killed, and before ``score`` the files removed;
            ``after``: processes that outlived this run, killed), or None (local sandbox).
    """

    returncode: int
    table: str
    verdict: Verdict | None
    error: str | None = None
    kernel_sha256: str | None = None
    fault: str | None = None
    gpu: str | None = None
    cleanup: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Every scenario correct."""
        return self.returncode == 0 and self.verdict is not None


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


BUDGET_SHARE = 0.75
"""Of a harness run's time limit, the share given to the candidate's own seconds (its build
and its worker's requests: ``--time-budget``): past it the candidate gets no more time and the
run still ends with a verdict, the rest of the limit covering the harness's work, the
upstreams and waits for the device's lock (:mod:`evals.harness.worker_link.budget`). A run that
outlasts its limit is the harness's fault and the sample is retried; a slow candidate must not
get there."""


def harness_argv(
    settings: TaskSettings,
    command: Literal["check", "bench", "score"],
    suite: str,
    *,
    timeout: int,
    scorer: bool = False,
) -> list[str]:
    """The sandbox command line: the relay, then the harness's own arguments.

    ``timeout``: the run's limit, seconds (its budget is :data:`BUDGET_SHARE` of it).
    ``scorer``: the relay of the scorer container (:data:`SCORER_RELAY`), which takes the
    kernel's bytes on stdin and runs the harness on its own copy, named as ``--kernel`` says.
    """
    python = settings.harness_command()[0]
    return [
        *(python, "-P", "-c", SCORER_RELAY if scorer else RELAY),
        *(command, "--target", settings.target, "--kernel", settings.kernel_file),
        *("--suite", suite, "--quiet", "--time-budget", f"{BUDGET_SHARE * timeout:.0f}"),
    ]


_RUNS: weakref.WeakKeyDictionary[object, anyio.Lock] = weakref.WeakKeyDictionary()


def _one_at_a_time(scorer: object) -> anyio.Lock:
    """The lock serialising one sample's runs in its scorer container.

    The relay kills every process but its own callers, the keep-alive and PID 1, so two runs of
    one sample (parallel tool calls) must not overlap: each would kill the other's workers.
    """
    try:
        return _RUNS.setdefault(scorer, anyio.Lock())
    except TypeError:  # not weakly referable: one lock per object's id, kept for the process
        return _RUNS_BY_ID.setdefault(id(scorer), anyio.Lock())


_RUNS_BY_ID: dict[int, anyio.Lock] = {}


def _is_local(env: object) -> bool:
    """Whether ``env`` (a sample's default sandbox) is Inspect's local one.

    ``--sandbox local`` replaces the container a task's ``sandbox`` argument names: there is no
    scorer container then, and the harness runs where the agent works, as in the local sandbox.
    """
    try:
        live = env.as_type(SandboxEnvironment)  # type: ignore[attr-defined]
    except Exception:  # a stand-in (tests), or no proxy in front of it
        live = env
    return type(live).__name__ == "LocalSandboxEnvironment"


def scorer_sandbox(settings: TaskSettings) -> SandboxEnvironment | str | None:
    """Where the harness runs: the scorer service, None (where the agent works), or why not.

    None: the local sandbox (``-T sandbox=local``, or Inspect's ``--sandbox local``), which
    cannot separate the agent from the scorer. A container sandbox without the service is a
    one-line reason, never the agent's container.
    """
    if settings.sandbox == "local":
        return None
    try:
        return sandbox(SCORER_SERVICE)
    except (ValueError, ProcessLookupError) as exc:
        try:
            if _is_local(sandbox()):
                return None
        except Exception:
            pass
        return (
            f"the {settings.sandbox} sandbox has no {SCORER_SERVICE!r} service: the harness runs "
            "only in a container the agent never ran a command in, never in the agent's "
            f"(add the service as sandboxes/README.md shows; {type(exc).__name__})"
        )


async def _read_kernel(settings: TaskSettings) -> bytes | HarnessRun:
    """The workspace kernel's bytes, or the run that failed to read it: the candidate's failure.

    The workspace is the agent's, and so is whatever stands at the kernel's path: a file it
    removed, locked or grew past Inspect's read limit (100 MiB), a link or a FIFO where the
    kernel should be, a container it broke. Counted as the environment's, such a failure made
    the sample an error that an eval set retries and every statistic leaves out: a way for a
    failing agent to have its sample dropped. An infrastructure fault at this moment is booked
    against the arm too, with its reason on record.
    """
    try:
        source: bytes = await sandbox().read_file(settings.kernel_file, text=False)
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return HarnessRun(
            -1, "", None, one_line(f"cannot read the kernel {settings.kernel_file}: {why}")
        )
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
    scorer = scorer_sandbox(settings)
    if isinstance(scorer, str):
        run = HarnessRun(-1, "", None, scorer, sha, f"{ENVIRONMENT} {scorer}")
    elif scorer is not None:
        async with _one_at_a_time(scorer):
            run = await _exec(
                settings, command, suite=suite, timeout=timeout, sha=sha, gpu=None,
                scorer=(scorer, source),
            )  # fmt: skip
    elif not leases_gpu(settings):
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
    scorer: tuple[SandboxEnvironment, bytes] | None = None,
) -> HarnessRun:
    """Run the harness in the sandbox (on ``gpu`` when one is leased); never raises.

    ``scorer``: the scorer container and the kernel's bytes, handed to its relay on stdin.
    """
    nonce = f"KERNELSEEK-VERDICT-{secrets.token_hex(16)}"
    where, kernel = scorer if scorer is not None else (sandbox(), None)
    try:
        result = await where.exec(
            harness_argv(settings, command, suite, timeout=timeout, scorer=scorer is not None),
            input=relay_input(nonce, kernel),
            env=harness_env(settings, gpu),
            timeout=timeout,
        )
    except TimeoutError:  # every request of the candidate has its own, shorter, limit
        late = f"the harness did not finish within {timeout} s"
        return HarnessRun(-1, "", None, late, sha, f"{HARNESS} {late}")
    except Exception as exc:  # a broken sandbox must not crash the tool; the scorer errors
        broken = f"sandbox error: {type(exc).__name__}: {exc}"
        return HarnessRun(-1, "", None, broken, sha, f"{ENVIRONMENT} {broken}")
    stdout, notes = split_notes(result.stdout or "", nonce)
    cleanup = _log_cleanup(command, notes) if scorer is not None else None
    table, text = split_output(stdout, nonce)
    verdict, reason = check_verdict(
        text, returncode=result.returncode, command=command, kernel_sha256=sha
    )
    if verdict is None:
        tail = (result.stderr or "").strip().splitlines()[-3:]
        said = f"; harness said: {' | '.join(tail)}" if tail else ""
        error = f"{reason}{said}"
        broken = f"{HARNESS} {error}"
        return HarnessRun(result.returncode, table, None, error, sha, broken, cleanup=cleanup)
    remember(command, verdict)
    fault = verdict_fault(verdict)
    return HarnessRun(result.returncode, table, verdict, None, sha, fault, cleanup=cleanup)


def _log_cleanup(command: str, notes: dict[str, Any]) -> dict[str, Any]:
    """Log the scorer relay's cleanup report into the transcript; returns it.

    A process killed before the run was left by an earlier one (a candidate's process that
    outlived its run, or a run whose caller gave up on it); one killed after it outlived this
    run. Either is named in the transcript with its command line.
    """
    before, after = notes.get("before") or {}, notes.get("after") or {}
    cleanup = {"command": command, "before": before, "after": after}
    leftovers = len(before.get("killed", [])) + len(after.get("outlived", []))
    transcript().info(
        {"scorer_cleanup": cleanup, "leftover_processes": leftovers}, source="kernelseek"
    )
    return cleanup
