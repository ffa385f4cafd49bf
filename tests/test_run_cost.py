"""Each harness run's cost (build, lock wait and hold, timed calls) and its transcript event."""

import asyncio
import json
from types import SimpleNamespace

from inspect_ai.log import transcript
from inspect_ai.util import ExecResult

from evals.bench.config.settings import TaskSettings
from evals.bench.scoring import harness_exec
from evals.bench.scoring.run_cost import EVENT_KEY, RunCost, run_costs
from evals.harness.measurement.device_lock import LockRecord
from evals.harness.verdict.record import Verdict

CPU_TASK = TaskSettings(
    target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa", sandbox="local"
)
VERDICT = Verdict(
    "bench", "cpu_attention", "smoke", {}, None, "ok",
    timing={"wall_s": 30.0, "build_s": 8.0, "candidate_calls_s": 2.5, "upstream_calls_s": 1.5},
    lock=LockRecord("cpu", "/tmp/lock", waited_s=4.0, acquired_at=1000.0, released_at=1020.0),
)  # fmt: skip


def test_a_verdict_gives_its_build_lock_and_timed_seconds():
    cost = RunCost.from_verdict("bench", VERDICT, gpu="GPU-a")
    assert cost == RunCost(
        command="bench", status="ok", gpu="GPU-a", wall_s=30.0, build_s=8.0,
        lock_waited_s=4.0, lock_held_s=20.0, acquired_at=1000.0, timed_calls_s=4.0,
    )  # fmt: skip
    assert RunCost.from_json({**cost.to_json(), "later_field": 1}) == cost
    # a saved verdict's JSON, read back as benchmarks/concurrency.py reads one, costs the same
    again = Verdict.from_json(json.loads(json.dumps(VERDICT.to_json())))
    assert RunCost.from_verdict("bench", again, gpu="GPU-a") == cost


def test_a_run_without_verdict_or_lock_costs_nothing_measured():
    assert RunCost.from_verdict("score", None) == RunCost(command="score", status="none")
    never_locked = Verdict("check", "cpu_attention", "smoke", {}, None, "error",
                           timing={"wall_s": 3.0})  # fmt: skip
    cost = RunCost.from_verdict("check", never_locked)
    assert (cost.lock_held_s, cost.acquired_at, cost.wall_s) == (0.0, None, 3.0)


def test_only_harness_run_info_events_are_read_back():
    bench = RunCost(command="bench", status="ok")
    events = [
        SimpleNamespace(event="info", data={EVENT_KEY: bench.to_json()}),
        SimpleNamespace(event="info", data={"gpu_pool": "leased"}),
        SimpleNamespace(event="info", data="plain text"),
        SimpleNamespace(event="model", data={EVENT_KEY: {"command": "forged", "status": "ok"}}),
    ]
    assert run_costs(events) == [bench]


class VerdictSandbox:
    """run_harness's sandbox: answers with a verdict on the relay's channel."""

    def __init__(self, verdict):
        self.verdict = verdict

    async def read_file(self, file, text=True):
        return b"kernel source"

    async def exec(self, cmd, input=None, env=None, timeout=None, **kwargs):
        import hashlib
        import json

        nonce = input.strip()
        body = {**self.verdict.to_json(), "command": "bench",
                "kernel": {"sha256": hashlib.sha256(b"kernel source").hexdigest()}}  # fmt: skip
        return ExecResult(True, 0, f"table\n{nonce}\n{json.dumps(body)}\n", "")


def test_each_harness_run_logs_its_cost_into_the_transcript(monkeypatch):
    monkeypatch.setattr(harness_exec, "sandbox", lambda: VerdictSandbox(VERDICT))
    before = len(transcript().events)
    run = asyncio.run(harness_exec.run_harness(CPU_TASK, "bench", suite="smoke", timeout=60))
    assert run.verdict is not None, run.error
    logged = run_costs(transcript().events[before:])
    assert logged == [RunCost.from_verdict("bench", run.verdict)]
    assert logged[0].lock_held_s == 20.0
