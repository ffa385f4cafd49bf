"""Container sandboxes run the harness in their ``scorer`` service, never where the agent works.

No Docker here: stand-in sandboxes record what ``run_harness`` asks of each. The relay itself
runs in a real scorer container in ``tests/test_docker_sandbox.py`` (``pytest -m docker``); it
kills processes, so it never runs on the host.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json

import pytest
from inspect_ai.log import transcript
from inspect_ai.util import ExecResult, OutputLimitExceededError

from evals.bench.config.settings import TaskSettings
from evals.bench.scoring import harness_exec, relay_io, relays
from evals.bench.scoring.faults import ENVIRONMENT
from evals.bench.scoring.scorer import score_from_run
from evals.harness.verdict.record import VERDICT_SCHEMA

KERNEL = b"// the agent's kernel\nint x = 1;\n"
DOCKER = TaskSettings(target="cpu_attention", suite="smoke", score_suite="smoke", sandbox="docker")
K8S = TaskSettings(target="fa3_hopper", suite="smoke", score_suite="smoke", sandbox="k8s")
LOCAL = TaskSettings(target="cpu_attention", suite="smoke", score_suite="smoke", sandbox="local")


class Agent:
    """The agent's sandbox (``default``): holds the kernel; must never run the harness."""

    def __init__(self, kernel: bytes = KERNEL) -> None:
        self.kernel, self.reads, self.execs = kernel, [], []

    async def read_file(self, file, text=True):
        self.reads.append(file)
        return self.kernel

    async def exec(self, cmd, input=None, env=None, timeout=None, **kwargs):
        self.execs.append(cmd)
        return _answer(cmd, input, self.kernel)


class Scorer:
    """The scorer service: answers as the relay does, with the kernel it was handed."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls, self.delay, self.running, self.overlapped = [], delay, 0, False

    async def read_file(self, file, text=True):  # pragma: no cover - must not be called
        raise AssertionError("the scorer's files are never read: only its stdout is")

    async def exec(self, cmd, input=None, env=None, timeout=None, **kwargs):
        self.calls.append({"cmd": cmd, "input": input, "env": env, "timeout": timeout})
        self.running += 1
        self.overlapped |= self.running > 1
        await asyncio.sleep(self.delay)
        self.running -= 1
        nonce, b64 = input.split("\n")[:2]
        notes = {"before": {"killed": [{"pid": 41, "cmd": "sleep 600"}], "survived": []}}
        note = f"{nonce}{relays.RELAY_NOTE}{json.dumps(notes)}"
        result = _answer(cmd, input, base64.b64decode(b64))
        return ExecResult(True, 0, f"{note}\n{result.stdout}", "")


def _answer(cmd, input, kernel: bytes) -> ExecResult[str]:
    nonce = input.split("\n")[0]
    verdict = {
        "schema": VERDICT_SCHEMA, "command": cmd[4], "status": "ok",
        "target": "cpu_attention", "suite": "smoke",
        "kernel": {"sha256": hashlib.sha256(kernel).hexdigest()},
        "scenarios": [], "aggregates": {},
    }  # fmt: skip
    return ExecResult(True, 0, f"the table\n{nonce}\n{json.dumps(verdict)}\n", "")


def _sandboxes(monkeypatch, agent, scorer) -> None:
    """``sandbox()`` is the agent's; ``sandbox("scorer")`` the scorer's, or missing (None)."""

    def pick(name=None):
        if name in (None, "default"):
            return agent
        if name == relays.SCORER_SERVICE and scorer is not None:
            return scorer
        raise ValueError(f"SandboxEnvironment '{name}' is not a recognized environment name.")

    monkeypatch.setattr(harness_exec, "sandbox", pick)


def _run(settings, command="check"):
    suite = settings.score_suite if command == "score" else settings.suite
    return asyncio.run(harness_exec.run_harness(settings, command, suite=suite, timeout=60))


@pytest.mark.parametrize("settings", [DOCKER, K8S], ids=["docker", "k8s"])
def test_container_sandboxes_run_the_harness_in_the_scorer_on_the_kernels_bytes(
    settings, monkeypatch
):
    agent, scorer = Agent(), Scorer()
    _sandboxes(monkeypatch, agent, scorer)
    run = _run(settings, "score")
    assert run.ok and run.verdict is not None, run.error
    assert agent.reads == [settings.kernel_file] and agent.execs == [], "nothing runs there"
    [call] = scorer.calls
    # argv: the scorer relay, the harness's arguments with the kernel's original file name
    assert call["cmd"][:4] == ["python3", "-P", "-c", relays.SCORER_RELAY]
    assert call["cmd"][4:] == [
        "score", "--target", settings.target, "--kernel", settings.kernel_file,
        "--suite", "smoke", "--quiet", "--time-budget", "45",  # 3/4 of the run's 60 s
    ]  # fmt: skip
    # stdin: the nonce, then the kernel's bytes (base64): the only thing that crosses
    nonce, b64, rest = call["input"].split("\n")
    assert nonce.startswith("KERNELSEEK-VERDICT-") and rest == ""
    assert base64.b64decode(b64, validate=True) == KERNEL
    assert call["env"] is None and call["timeout"] == 60
    # the relay's report is taken out of the table and kept with the run
    assert run.table == "the table" and nonce not in run.table
    assert run.cleanup is not None
    assert run.cleanup["before"]["killed"] == [{"pid": 41, "cmd": "sleep 600"}]
    assert run.kernel_sha256 == hashlib.sha256(KERNEL).hexdigest()


def test_the_relays_cleanup_report_is_in_the_transcript(monkeypatch):
    _sandboxes(monkeypatch, Agent(), Scorer())
    before = len(transcript().events)
    _run(DOCKER)
    logged = [
        e.data for e in transcript().events[before:] if isinstance(e.data, dict)
        if "scorer_cleanup" in e.data
    ]  # fmt: skip
    assert len(logged) == 1 and logged[0]["leftover_processes"] == 1
    assert logged[0]["scorer_cleanup"]["before"]["killed"][0]["cmd"] == "sleep 600"


@pytest.mark.parametrize("settings", [DOCKER, K8S], ids=["docker", "k8s"])
def test_a_sandbox_without_the_scorer_service_fails_in_one_line_never_in_the_agents(
    settings, monkeypatch
):
    agent = Agent()
    _sandboxes(monkeypatch, agent, None)
    run = _run(settings, "score")
    assert agent.execs == [], "never a fallback to the agent's container"
    assert run.verdict is None and run.fault is not None and "\n" not in run.fault
    assert run.fault.startswith(ENVIRONMENT)  # the environment's fault, not the candidate's
    assert f"no {relays.SCORER_SERVICE!r} service" in run.fault
    assert "sandboxes/README.md" in run.fault


def test_the_local_sandbox_runs_the_harness_where_the_agent_works(monkeypatch):
    agent = Agent()
    _sandboxes(monkeypatch, agent, Scorer())
    run = _run(LOCAL)
    assert run.ok, run.error
    [cmd] = agent.execs
    assert cmd[3] == relays.RELAY
    assert cmd[-5:] == ["--suite", "smoke", "--quiet", "--time-budget", "45"]
    assert run.cleanup is None


def test_inspects_local_sandbox_in_place_of_a_container_runs_as_local(monkeypatch):
    """``--sandbox local`` on a task whose argument says docker: no scorer, none to demand."""

    class LocalSandboxEnvironment(Agent):  # named as Inspect's own
        pass

    agent = LocalSandboxEnvironment()
    _sandboxes(monkeypatch, agent, None)
    run = _run(DOCKER)
    assert run.ok, run.error
    assert len(agent.execs) == 1 and agent.execs[0][3] == relays.RELAY


def test_one_samples_runs_never_overlap_in_its_scorer(monkeypatch):
    """The relay kills every process its own run did not start: parallel calls wait in turn."""
    scorer = Scorer(delay=0.05)
    _sandboxes(monkeypatch, Agent(), scorer)

    async def both():
        return await asyncio.gather(
            *(
                harness_exec.run_harness(DOCKER, c, suite="smoke", timeout=60)
                for c in ("check", "bench")
            )
        )

    runs = asyncio.run(both())
    assert all(run.ok for run in runs) and len(scorer.calls) == 2
    assert not scorer.overlapped


def test_relay_input_carries_the_nonce_and_the_kernels_bytes():
    assert relay_io.relay_input("N", None) == "N\n"
    binary = bytes(range(256)) + b"\n\r\x00"  # any bytes survive, newlines included
    nonce, b64, rest = relay_io.relay_input("N", binary).split("\n")
    assert (nonce, rest) == ("N", "") and base64.b64decode(b64) == binary


def test_the_scorer_relay_is_python_that_kills_before_and_after_the_run():
    code = compile(relays.SCORER_RELAY, "<scorer relay>", "exec")
    assert code is not None
    relay = relays.SCORER_RELAY
    # before: earlier runs' processes, then (score) files; after: what outlived this run
    assert relay.index("killed, survived = sweep()") < relay.index("cli.main(")
    assert relay.index("cli.main(") < relay.index("outlived, _ = sweep()")
    assert 'wipe() if args[0] == "score"' in relay
    # the verdict is the object `evaluate` returned; the harness's file is only compared
    assert "held[-1].to_json()" in relay and "verdict_file_changed" in relay
    assert 'mkdtemp(prefix="kernelseek-kernel-")' in relay


def test_split_notes_keeps_only_lines_after_this_calls_nonce():
    stdout = 'table\nN:relay:{"before": {"killed": []}}\nrow\nM:relay:{"forged": 1}\nN:relay:nope'
    rest, notes = relay_io.split_notes(stdout, "N")
    assert notes == {"before": {"killed": []}}
    assert rest == 'table\nrow\nM:relay:{"forged": 1}'


class _Unreadable(Agent):
    """The agent's sandbox where the kernel's path cannot be read, for the agent's own reasons."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    async def read_file(self, file, text=True):
        self.reads.append(file)
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [
        OutputLimitExceededError("100 MiB", None),  # a kernel grown past the read limit
        RuntimeError("no such container"),  # the agent's container, killed from inside
        ValueError("not a regular file in the archive"),  # a FIFO or a link at the path
        TimeoutError(),
        FileNotFoundError("kernel.cpp"),
    ],
    ids=lambda e: type(e).__name__,
)
@pytest.mark.parametrize("settings", [DOCKER, LOCAL], ids=["docker", "local"])
def test_a_kernel_the_agent_made_unreadable_is_its_own_failure_never_a_retried_error(
    settings, exc, monkeypatch
):
    # before: anything but a missing, locked or directory kernel was the environment's fault,
    # so a failing agent could have its sample errored, retried and left out of every statistic
    scorer = Scorer()
    _sandboxes(monkeypatch, _Unreadable(exc), scorer)
    run = _run(settings, "score")
    assert run.fault is None and run.verdict is None and scorer.calls == []
    assert run.error is not None
    assert run.error.startswith(f"cannot read the kernel {settings.kernel_file}: ")
    assert type(exc).__name__ in run.error
    assert score_from_run(run, "sdpa").value["success"] == 0
