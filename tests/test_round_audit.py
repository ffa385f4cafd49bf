"""The round audit: a CPU candidate's timing round on the parent's clock against its reports.

A worker whose in-process clock runs slow during its calls reports less time than its round
takes; the parent times the round and the same round with a kernel that does nothing, in
the upstreams' worker, while the candidate's worker is stopped. Played here with fake
workers on a fake clock; ``tests/test_hostile_process.py`` plays it with a real forged clock.
"""

import contextlib
import dataclasses
from types import SimpleNamespace

import pytest

from evals.harness import Code
from evals.harness.clock_checks import round_audit
from evals.harness.clock_checks.round_audit import AUDIT, AuditFailure, RoundAudit
from evals.harness.failures import Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import get_target
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker.serve import Worker
from evals.harness.worker_link.worker_client import WorkerFailure

SETTINGS = {"warmup": 1, "min_trials": 5, "max_trials": 100, "time_cap_s": 2.0}
REQUEST = {"op": "time", "seeds": [11, 12, 13], "rng_seed": 7, "settings": SETTINGS}


class Clock:
    """Seconds that pass only when a fake worker works."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Proc:
    pid = 12345

    def poll(self):
        return None


class Candidate:
    """A candidate's worker: each round takes ``overhead + calls' true time``, and reports
    ``true time / forge`` (a forged clock), or per round as ``rounds`` says."""

    def __init__(self, clock, rounds, overhead=0.05, trials=20):
        self.clock, self.rounds, self.overhead, self.trials = clock, iter(rounds), overhead, trials
        self.proc, self.sent, self.stopped = Proc(), [], False

    def request(self, header, timeout_s=None):
        true_s, reported_s = next(self.rounds)
        self.sent.append(header)
        self.clock.now += self.overhead + true_s
        stats = {"median_us": 100.0, "mad_us": 1.0, "min_us": 90.0, "max_us": 120.0}
        figures = {"candidate": {**stats, "rse": 0.01, "n": 20}}
        answer = {"trials": self.trials, "busy_s": {"candidate": reported_s}, "stats": figures}
        return {**answer, "issue": figures}, b""

    @contextlib.contextmanager
    def paused(self):
        self.stopped = True
        yield
        self.stopped = False

    def start(self):
        raise AssertionError("the worker was running")


class Upstreams:
    """The upstreams' worker: a null round takes ``overhead`` seconds."""

    def __init__(self, clock, candidate, overhead=0.05, fails=False):
        self.clock, self.candidate, self.overhead = clock, candidate, overhead
        self.proc, self.sent, self.candidate_stopped, self.fails = Proc(), [], [], fails

    def request(self, header, timeout_s=None):
        self.sent.append(header)
        self.candidate_stopped.append(self.candidate.stopped)
        if self.fails:
            raise WorkerFailure(Failure(Code.CRASH, "the worker died (signal 9)"))
        self.clock.now += self.overhead
        return {"ok": True}, b""


def _run(
    monkeypatch, rounds, *, contract=False, device="cpu", upstreams=True, null_fails=False,
    trials=20,
):
    clock = Clock()
    monkeypatch.setattr(round_audit.time, "perf_counter", clock)
    candidate = Candidate(clock, rounds, trials=trials)
    ups = Upstreams(clock, candidate, fails=null_fails) if upstreams else None
    target = SimpleNamespace(device=device)
    session = SimpleNamespace(target=target, client=candidate, upstreams=ups, audits={})
    scenario = Scenario("s", {}, contract=contract)
    answers = []
    header, sent = round_audit.audited_round(session, scenario, REQUEST, 60.0, answers.append)
    return session, scenario, candidate, ups, header, sent, answers


def test_an_honest_round_is_kept_as_it_is_and_its_null_twin_ran_with_the_candidate_stopped(
    monkeypatch,
):
    session, scenario, cand, ups, header, sent, answers = _run(monkeypatch, [(1.0, 1.0)])
    assert sent == {**REQUEST, "commit": True} and len(cand.sent) == 1 and len(answers) == 1
    assert "audit_factor" not in header and header["stats"]["candidate"]["median_us"] == 100.0
    (null,) = ups.sent
    assert ups.candidate_stopped == [True]
    assert null["null"] is True and null["candidate"] is False and null["upstreams"] == []
    assert null["seeds"] == REQUEST["seeds"] and null["rng_seed"] == REQUEST["rng_seed"]
    settings = null["settings"]
    assert settings["min_trials"] == settings["max_trials"] == 20  # the round's own trials
    assert settings["warmup"] == 1
    (audit,) = session.audits["s"]
    assert audit.factor == 1.0 and audit.calls == 20 + 3
    result = ScenarioResult(scenario)
    round_audit.conclude(session, result)
    assert result.checks["round_audit"].startswith("passed: ")
    assert result.timing["round_audit"][0]["factor"] == 1.0 and not session.audits


def test_a_forged_clock_fails_every_round_each_on_new_inputs(monkeypatch):
    with pytest.raises(AuditFailure) as caught:
        _run(monkeypatch, [(1.0, 1.0 / 3)] * 3)
    assert caught.value.failure.code == Code.TIMING_MISMATCH
    assert "the parent's clock saw a timing round of 23 calls" in caught.value.failure.reason


def test_rounds_after_the_first_have_seeds_and_orders_of_their_own(monkeypatch):
    rounds = [(1.0, 0.5), (1.0, 1.0)]  # a burst of load in the first, then explained
    session, _, cand, _, _, sent, answers = _run(monkeypatch, rounds)
    first, second = cand.sent
    assert first["seeds"] == REQUEST["seeds"] and len(answers) == 2
    assert not set(second["seeds"]) & set(first["seeds"]) and second["rng_seed"] != 7
    assert sent == second  # the request whose answer counts: the worker keeps its outputs
    assert [a.factor > 1 for a in session.audits["s"]] == [True, False]


def test_a_slight_excess_on_every_round_scales_the_candidate_figures(monkeypatch):
    # 1.5 s of calls reported as 1 s: beyond what 1 s explains, by a factor under 1.5
    session, scenario, _, _, header, _, _ = _run(monkeypatch, [(1.5, 1.0)] * 3)
    factor = session.audits["s"][-1].factor
    assert 1.0 < factor < AUDIT.fail_factor
    assert header["audit_factor"] == factor
    assert header["stats"]["candidate"]["median_us"] == pytest.approx(100.0 * factor)
    assert header["issue"]["candidate"]["min_us"] == pytest.approx(90.0 * factor)
    result = ScenarioResult(scenario)
    round_audit.conclude(session, result)
    assert result.checks["round_audit"].startswith("scaled: ")
    assert any("candidate times scaled by" in f for f in result.flags)


@pytest.mark.parametrize("explained", [0, 2], ids=["first", "last"])
def test_one_round_under_the_failing_factor_saves_a_scenario_from_failing(monkeypatch, explained):
    # load that costs a short round a scheduler slice can put an honest round past 1.5x; a
    # forge falls short on every round alike, so one round under it shows the reports hold
    rounds = [(1.0, 0.5)] * 3
    rounds[explained] = (1.5, 1.0)
    session, scenario, _, _, header, _, _ = _run(monkeypatch, rounds)
    factors = [a.factor for a in session.audits["s"]]
    assert min(factors) < AUDIT.fail_factor <= factors[1] and len(factors) == 3
    assert header["audit_factor"] == factors[-1]  # the last round's answer counts, as it was
    result = ScenarioResult(scenario)
    round_audit.conclude(session, result)
    assert result.checks["round_audit"].startswith("scaled: ") and result.failure is None


def test_a_contract_scenario_is_withheld_not_failed(monkeypatch):
    session, scenario, *_ = _run(monkeypatch, [(1.0, 0.2)] * 3, contract=True)
    result = ScenarioResult(scenario)
    round_audit.conclude(session, result)
    assert result.timing["unverified"].startswith("times unverified: ")
    assert result.checks["round_audit"].startswith("not counted")


@pytest.mark.parametrize(("device", "upstreams"), [("cuda", True), ("cpu", False)])
def test_no_audit_on_a_gpu_or_without_an_upstreams_worker(monkeypatch, device, upstreams):
    session, *_, header, sent, _ = _run(
        monkeypatch, [(1.0, 0.1)], device=device, upstreams=upstreams
    )
    assert sent == REQUEST and not session.audits and "audit_factor" not in header


def test_the_bound_scales_with_the_reports_and_the_null_round():
    audit = RoundAudit(wall_s=1.1, null_s=0.1, busy_s=1.0, calls=100)
    assert audit.bound_s == pytest.approx(1.25 + 0.25 * 0.1 + 100 * 40e-6)
    assert audit.factor == 1.0
    forged = dataclasses.replace(audit, wall_s=3.1)  # 3 s of calls reported as 1
    assert forged.factor == pytest.approx(1 + (3.0 - forged.bound_s) / 1.25)


def test_the_workers_null_round_makes_the_same_inputs_and_calls_no_kernel():
    target = get_target("cpu_attention")
    scenario = target.load_suite("smoke").scenarios[0]
    settings = dataclasses.replace(target.timing, min_trials=4, max_trials=4, time_cap_s=1e9)
    reply, _ = Worker(target).time({
        "scenario": scenario.to_json(), "seeds": [1, 2, 3], "candidate": False, "null": True,
        "upstreams": [], "settings": dataclasses.asdict(settings), "rng_seed": 3,
    })  # fmt: skip
    assert reply["trials"] == 4 and set(reply["stats"]) == {"null"}
    assert reply["kept"] == [0, 1, 2, 3] and "digests" not in reply  # kept as a candidate's



def test_a_null_round_that_fails_is_the_harnesss_fault_and_the_candidate_continues(
    monkeypatch,
):
    with pytest.raises(WorkerFailure) as caught:
        _run(monkeypatch, [(1.0, 1.0)], null_fails=True)
    assert caught.value.failure.code == Code.HARNESS_ERROR
    assert "in a null round: the worker died" in caught.value.failure.reason


def test_the_null_round_runs_no_more_trials_than_the_request_allowed(monkeypatch):
    # a worker claiming more trials than it may run would lengthen the round it is held to
    session, _, _, ups, *_ = _run(monkeypatch, [(1.0, 1.0)], trials=10_000)
    (null,) = ups.sent
    assert null["settings"]["min_trials"] == null["settings"]["max_trials"] == 100
    assert session.audits["s"][0].calls == 100 + 3
