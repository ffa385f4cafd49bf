"""A GPU run checks under its device's lock shared with other runs' checks, then measures alone.

The lock's modes (shared beside shared, never beside exclusive; a waiting measurement stops
new checkers at the gate; at most SHARED_SLOTS checkers), and the two passes of judging: which
scenarios each pass judges, by which phases, and fail-fast across the second pass.
"""

import threading
import time
from dataclasses import dataclass, field

import pytest

from evals.harness import Code
from evals.harness.failures import Failure, HarnessInputError
from evals.harness.judging import judge_suite
from evals.harness.measurement.device_lock import LOCK_DIR_ENV, SHARED_SLOTS, device_lock
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import ScenarioResult, Verdict


@pytest.fixture(autouse=True)
def _locks(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))


def _busy(shared: bool, timeout_s: float = 0.3) -> Failure:
    with pytest.raises(HarnessInputError) as caught:  # noqa: SIM117 (the block must be entered)
        with device_lock("gpu0", what="late", timeout_s=timeout_s, shared=shared):
            pass
    return caught.value.failure


def test_checkers_share_the_device_and_a_measurement_waits_for_them():
    with device_lock("gpu0", what="a", timeout_s=1, shared=True) as a:
        with device_lock("gpu0", what="b", timeout_s=1, shared=True) as b:
            assert a.mode == b.mode == "shared" and b.waited_s < 0.3
        assert _busy(shared=False).code == Code.DEVICE_BUSY
    with device_lock("gpu0", what="m", timeout_s=1) as m:
        assert m.mode == "exclusive"
        assert _busy(shared=True).code == Code.DEVICE_BUSY  # no check beside a measurement
        assert "pid" in _busy(shared=False).reason  # whoever waits is told who measures


def test_a_waiting_measurement_stops_new_checkers_at_the_gate():
    got: list[float] = []

    def measure() -> None:
        with device_lock("gpu0", what="m", timeout_s=10):
            got.append(time.monotonic())

    with device_lock("gpu0", what="a", timeout_s=1, shared=True):
        waiter = threading.Thread(target=measure)
        waiter.start()
        time.sleep(0.5)  # the measurement now waits, holding the gate
        assert _busy(shared=True).code == Code.DEVICE_BUSY  # a new checker queues behind it
        released = time.monotonic()
    waiter.join(10)
    assert got and got[0] >= released  # it measured once the first checker left


def test_at_most_shared_slots_runs_check_at_once():
    holders = [
        device_lock("gpu0", what=f"c{i}", timeout_s=1, shared=True) for i in range(SHARED_SLOTS)
    ]
    for h in holders:
        h.__enter__()
    try:
        failure = _busy(shared=True)
        assert failure.code == Code.DEVICE_BUSY
        assert f"{SHARED_SLOTS} runs checking" in failure.reason
    finally:
        for h in holders:
            h.__exit__(None, None, None)
    with device_lock("gpu0", what="next", timeout_s=1, shared=True) as record:
        assert record.waited_for is None


@dataclass
class _Work:
    bytes: float


@dataclass
class _Target:
    sizes: dict[str, float]

    def work(self, scenario: Scenario) -> _Work:
        return _Work(self.sizes[scenario.id])

    def device_state(self) -> dict[str, float]:
        return {}


@dataclass
class _Session:
    target: _Target
    command: str = "bench"
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    budget: None = None  # no time budget (tests/test_time_budget.py has one)


@pytest.fixture
def spied(monkeypatch):
    """judge_suite with its judging recorded: failures come from ``fail`` (id -> failure)."""
    fail: dict[tuple[str, str], Failure] = {}

    def judged(session, result, phases):
        session.calls.append((result.scenario.id, phases))
        found = [fail[(result.scenario.id, p)] for p in phases if (result.scenario.id, p) in fail]
        failure = found[0] if found else None
        result.failure, result.correct = failure, failure is None

    def judge_scenario(session, scenario, phases=None):
        result = ScenarioResult(scenario)
        judged(session, result, phases or ("verify", "probe", "time"))
        return result

    monkeypatch.setattr(judge_suite, "judge_scenario", judge_scenario)
    monkeypatch.setattr(judge_suite, "run_phases", judged)
    monkeypatch.setattr(judge_suite, "trace_all", lambda session, results: None)
    monkeypatch.setattr(judge_suite, "time_all_upstreams", lambda *a: None)
    return fail


def _run(
    sizes: dict[str, float], *, limit: float, keep_going: bool = False, command: str = "bench"
):
    session = _Session(_Target(sizes), command)
    verdict = Verdict(command, "t", "dev", {}, None, "error")
    scenarios = tuple(Scenario(id=name, params={}) for name in sizes)
    heard: list[tuple[str, bool]] = []

    def progress(done, total, result):
        heard.append((result.scenario.id, result.correct))

    pending = judge_suite.check_scenarios(
        verdict, session, scenarios, progress, keep_going=keep_going, shared_bytes=limit
    )
    first = list(session.calls)
    judge_suite.measure_scenarios(verdict, session, pending, progress, keep_going=keep_going)
    return verdict, first, session.calls[len(first):], heard


def test_small_scenarios_are_checked_first_and_large_ones_wholly_while_measuring(spied):
    spied[("b", "probe")] = Failure(Code.STALE_RESULT, "stale")
    verdict, first, second, heard = _run({"a": 1, "b": 1, "big": 9, "c": 1}, limit=4)
    assert first == [("a", ("verify", "probe")), ("b", ("verify", "probe")),
                     ("c", ("verify", "probe"))]
    # b failed its checks: never timed; big is checked and timed while the device is held alone
    assert second == [("a", ("time",)), ("big", ("verify", "probe", "time")), ("c", ("time",))]
    assert [r.scenario.id for r in verdict.results] == ["a", "b", "big", "c"]
    assert [r.correct for r in verdict.results] == [True, False, True, True]
    assert ("b", False) in heard and heard[-1] == ("c", True)


@pytest.mark.parametrize("command", ["check", "bench"])
def test_a_check_is_traced_by_the_process_that_checked_it(spied, monkeypatch, command):
    # the second pass starts the candidate's process afresh: a check's trace taken there
    # would see only that process's first calls, which a late-misbehaving kernel gets right
    def traced(session, results):
        session.calls.append(("trace", tuple(r.scenario.id for r in results)))

    monkeypatch.setattr(judge_suite, "trace_all", traced)
    _, first, second, _ = _run({"a": 1, "big": 9, "c": 1}, limit=4, command=command)
    if command == "check":
        assert first[-1] == ("trace", ("a", "c"))  # after their checks, before the restart
        assert [call[0] for call in second] == ["big", "trace"]
        assert second[-1] == ("trace", ("big",))
    else:  # traced once, after all timing, as timed calls are made
        assert ("trace", ("a", "c")) not in first
        assert second[-1] == ("trace", ("a", "big", "c"))


def test_the_same_crash_twice_in_the_measuring_pass_skips_the_rest(spied):
    for name in ("a", "b"):
        spied[(name, "time")] = Failure(Code.CRASH, "segfault")
    verdict, _, second, _ = _run({"a": 1, "b": 1, "c": 1, "d": 1}, limit=4)
    assert [call[0] for call in second] == ["a", "b"]  # c and d never ran
    codes = [r.failure.code for r in verdict.results]
    assert codes == [Code.CRASH, Code.CRASH, Code.SKIPPED, Code.SKIPPED]
    assert any("stopped early: 2 scenario(s) skipped" in f for f in verdict.flags)
    verdict, _, second, _ = _run({"a": 1, "b": 1, "c": 1, "d": 1}, limit=4, keep_going=True)
    assert len(second) == 4


def test_the_report_gives_the_shared_and_the_alone_holds():
    from evals.harness.measurement.device_lock import LockRecord
    from evals.harness.verdict.report import _timing_lines

    timing = {k: 0.0 for k in ("build_s", "candidate_calls_s", "upstream_calls_s", "reference_s")}
    shared = LockRecord("gpu0", "p", 2.0, acquired_at=10.0, released_at=18.5, mode="shared")
    alone = LockRecord("gpu0", "p", waited_s=1.0, acquired_at=19.0, released_at=31.0)
    lines = _timing_lines({**timing, "wall_s": 40.0}, alone, shared)
    assert "waiting for the device lock 3.0 s" in lines[0]
    assert lines[-1] == "device lock: held shared for checks 8.5 s, alone 12.0 s"


SMALL = ("smoke-fp32-d64-s128-h4-full", "smoke-bf16-d128-s53-h2-full-std8")


def test_both_passes_judge_with_real_workers(monkeypatch):
    # the two passes run on the CPU target as a GPU target runs them: real workers, the check
    # pass's results timed in the second, the lock shared, then held alone
    from evals.harness.building.build import build
    from evals.harness.judging import judge_locked as locked
    from evals.harness.pipeline import runner
    from evals.harness.targets import get_target
    from tests.helpers import START_CPU

    target = get_target("cpu_attention")
    built = build(target, START_CPU)
    assert built.library is not None, built.failure
    settings = runner.RunSettings("bench", "cpu_attention", START_CPU, suite="smoke")
    verdict = Verdict("bench", "cpu_attention", "smoke", {}, None, "error")
    verdict.seed = 5
    verdict.provenance = {"device": {"memory_bytes": 1 << 40}}
    scenarios = tuple(s for s in target.load_suite("smoke").scenarios if s.id in SMALL)
    monkeypatch.setattr(locked, "_two_passes", lambda target, held: True)
    pids = []
    check, measure = locked.check_scenarios, locked.measure_scenarios

    def checked(verdict, session, *args, **kwargs):
        found = check(verdict, session, *args, **kwargs)
        pids.append(session.client.proc.pid)
        return found

    def measured(verdict, session, *args, **kwargs):
        pids.append(session.client.proc.pid)
        measure(verdict, session, *args, **kwargs)

    monkeypatch.setattr(locked, "check_scenarios", checked)
    monkeypatch.setattr(locked, "measure_scenarios", measured)
    locked.judge_locked(verdict, target, built.library, scenarios, locked.Tally(),
                         (None, None), settings, None)
    assert [r.scenario.id for r in verdict.results] == list(SMALL)
    assert all(r.correct for r in verdict.results), [r.failure for r in verdict.results]
    for r in verdict.results:
        assert {"verify", "probe", "time"} <= set(r.seconds) and r.speedup("sdpa")
    assert len(pids) == 2 and pids[0] != pids[1]  # measured by a fresh candidate process
    shared, alone = verdict.check_lock, verdict.lock
    assert shared.mode == "shared" and alone.mode == "exclusive"
    assert shared.released_at <= alone.acquired_at
