"""Warm start: workers start, and upstreams pay their first calls, before the device's lock.

Nothing of it measures; on a GPU target it held the lock for seconds while other runs
waited. The candidate's own code is never called by it.
"""

from __future__ import annotations

import contextlib
import copy

import pytest

from evals.harness.failures import Code, Failure
from evals.harness.judging import judge_locked as locked
from evals.harness.judging.warm_start import StartFailure, lightest, start_workers
from evals.harness.pipeline import runner
from evals.harness.pipeline.runner import RunSettings, evaluate
from evals.harness.targets import get_target
from evals.harness.worker_link.worker_client import WorkerClient, WorkerFailure
from tests.helpers import ROOT, START_CPU


def _gpu_like(target):
    """The CPU target as the runner sees a GPU one (which builds outside its lock)."""
    gpu_like = copy.copy(target)
    gpu_like.device = "cuda"
    return gpu_like


@pytest.fixture()
def target():
    return get_target("cpu_attention")


def test_lightest_is_the_scenario_moving_fewest_bytes_that_the_upstream_runs(target, monkeypatch):
    scenarios = target.load_suite("smoke").scenarios
    by_bytes = sorted(scenarios, key=lambda s: target.work(s).bytes)
    assert lightest(target, scenarios, "sdpa") == by_bytes[0]
    upstream = target.upstream("sdpa")
    refuses = by_bytes[0].id
    monkeypatch.setattr(type(upstream), "unsupported_reason",
                        lambda self, s: "no" if s.id == refuses else None)
    assert lightest(target, scenarios, "sdpa") == by_bytes[1]
    monkeypatch.setattr(type(upstream), "unsupported_reason", lambda self, s: "no")
    assert lightest(target, scenarios, "sdpa") is None


def test_only_upstream_code_is_warmed_never_the_candidates(target, monkeypatch):
    sent: list[tuple[str, dict]] = []

    def spy_request(self, message, *args, **kwargs):
        kind = "self-check" if self.candidate_upstream else "candidate" if self.library else "up"
        sent.append((kind, message))
        return {"ok": True, "failed": {}}, b""

    monkeypatch.setattr(WorkerClient, "start", lambda self: None)
    monkeypatch.setattr(WorkerClient, "request", spy_request)
    scenarios = target.load_suite("smoke").scenarios
    clients = [WorkerClient(target, START_CPU), WorkerClient(target, None),
               WorkerClient(target, None, candidate_upstream="sdpa")]
    start_workers(target, clients, scenarios, seed=5)
    kinds = {kind: message for kind, message in sent}
    assert "candidate" not in kinds  # its first calls belong to the requests that judge it
    assert kinds["up"]["op"] == kinds["self-check"]["op"] == "warm"
    assert set(kinds["up"]["calls"]) == {u.name for u in target.upstreams}
    assert set(kinds["self-check"]["calls"]) == {"sdpa"}


def test_a_gpu_targets_workers_start_before_its_lock_and_judge_inside_it(monkeypatch):
    events: list[str] = []

    @contextlib.contextmanager
    def lock(*args, shared=False, **kwargs):
        events.append("shared lock" if shared else "lock")
        yield None
        events.append("unlock")

    def spy_start(target, clients, scenarios, seed):
        events.append("start")
        return 0.0

    real_target = get_target("cpu_attention")
    gpu_like = _gpu_like(real_target)
    monkeypatch.setattr(locked, "run_lock", lock)
    monkeypatch.setattr(locked, "start_workers", spy_start)
    monkeypatch.setattr(locked, "check_scenarios", lambda *a, **k: events.append("check") or set())
    monkeypatch.setattr(locked, "_ceilings", lambda *a: events.append("ceilings"))
    monkeypatch.setattr(locked, "measure_scenarios", lambda *a, **k: events.append("measure"))
    monkeypatch.setattr(locked.WorkerClient, "kill", lambda self: events.append("kill"))
    monkeypatch.setattr(locked, "_fresh_worker", lambda client: events.append("fresh worker"))
    settings = RunSettings(command="bench", target="cpu_attention", kernel=None,
                           candidate_upstream="sdpa")
    verdict = runner.Verdict("bench", "cpu_attention", "smoke", {}, None, "error")
    verdict.seed = 1
    scenarios = real_target.load_suite("smoke").scenarios
    locked.judge_locked(verdict, gpu_like, None, scenarios, locked.Tally(), (None, None),
                         settings, None)
    # the checks share the device with other runs' checks; the ceilings and timing hold it alone
    # and the candidate's worker killed before another run may measure, started afresh outside
    assert events == ["start", "shared lock", "check", "kill", "unlock", "fresh worker",
                      "lock", "ceilings", "measure", "unlock"]


def test_the_warm_op_calls_each_upstream_once_and_reports_a_failure(target):
    client = WorkerClient(target, None)
    scenario = lightest(target, target.load_suite("smoke").scenarios, "sdpa")
    try:
        client.start()
        header, _ = client.request({"op": "warm", "calls": {"sdpa": scenario.to_json()},
                                    "seed": 3})
        assert header["ok"] and header["failed"] == {}
        header, _ = client.request({"op": "warm", "calls": {"nope": scenario.to_json()},
                                    "seed": 3})
        assert "nope" in header["failed"]  # reported, and the worker still serves
        header, _ = client.request({"op": "warm", "calls": {}, "seed": 3})
        assert header["ok"]
    finally:
        client.close()


def test_a_worker_that_fails_to_start_fails_every_scenario_without_taking_the_lock(monkeypatch):
    taken: list[bool] = []

    def refuse(target, clients, scenarios, seed):
        failure = Failure(Code.MISSING_ENTRY_POINT, "missing entry point kernelseek::attention")
        raise StartFailure(failure)

    monkeypatch.setattr(locked, "run_lock", lambda *a, **k: taken.append(True))
    monkeypatch.setattr(locked, "start_workers", refuse)
    gpu_like = _gpu_like(get_target("cpu_attention"))
    settings = RunSettings(command="check", target="cpu_attention", kernel=START_CPU)
    verdict = runner.Verdict("check", "cpu_attention", "smoke", {}, None, "error")
    scenarios = gpu_like.load_suite("smoke").scenarios
    locked.judge_locked(verdict, gpu_like, START_CPU, scenarios, locked.Tally(), (None, None),
                         settings, None)
    assert verdict.failure is not None and verdict.failure.code == Code.MISSING_ENTRY_POINT
    assert len(verdict.results) == len(scenarios) and not any(r.correct for r in verdict.results)
    assert taken == []


def test_a_candidate_that_fails_to_load_is_judged_as_before():
    kernel = ROOT / "tests/data/cpu_attention/missing_entry.cpp"
    verdict = evaluate(RunSettings(command="check", target="cpu_attention", kernel=kernel,
                                   suite="smoke", seed=1))
    assert verdict.failure is not None and verdict.failure.code == Code.MISSING_ENTRY_POINT
    assert verdict.status == "failed" and all(not r.correct for r in verdict.results)


@pytest.mark.parametrize("failing", [("up",), ("candidate",), ("candidate", "up")])
def test_a_start_failure_names_whose_worker_failed_and_closes_every_worker(
    target, monkeypatch, failing
):
    closed: list[str] = []

    def kind(client):
        return "candidate" if client.library else "up"

    def start(self):
        if kind(self) in failing:
            raise WorkerFailure(Failure(Code.LOAD_ERROR, f"{kind(self)} would not load"))

    monkeypatch.setattr(WorkerClient, "start", start)
    monkeypatch.setattr(WorkerClient, "request", lambda self, *a, **k: ({"ok": True}, b""))
    monkeypatch.setattr(WorkerClient, "close", lambda self: closed.append(kind(self)))
    clients = [WorkerClient(target, START_CPU), WorkerClient(target, None)]
    with pytest.raises(StartFailure) as info:
        start_workers(target, clients, target.load_suite("smoke").scenarios, seed=5)
    assert sorted(closed) == ["candidate", "up"]
    if "candidate" in failing:  # the candidate's own failure, even where both failed
        assert info.value.failure.code == Code.LOAD_ERROR
        assert info.value.failure.reason == "candidate would not load"
    else:  # not the candidate's doing
        assert info.value.failure.code == Code.HARNESS_ERROR
        assert info.value.failure.reason.startswith("the upstreams' worker failed to start")
