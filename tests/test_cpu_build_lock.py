"""A CPU target builds under its device's lock; a GPU target builds outside it.

On a CPU target one run's compiler takes the cores another run is timing on (an upstream
judged against itself: 0.905x beside one building run, 0.167x beside two), so a run takes
the lock before the trivial kernel's prebuild and the candidate's build and judges under
that same hold. A GPU target's build uses the CPU, not the measured device: it stays outside
the lock, so that a run compiles while another is timed. Each test holds the lock itself
until the run says it waits, and records who held the lock when each build began.
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import threading

from evals.harness import Code
from evals.harness.judging import judge_locked as locked
from evals.harness.measurement.device_lock import LOCK_DIR_ENV, device_lock
from evals.harness.pipeline import runner
from evals.harness.pipeline.runner import RunSettings, evaluate
from evals.harness.static import baseline_prebuild
from tests.helpers import START_CPU, failures_of

SCENARIO = "smoke-fp32-d64-s128-h4-full"
HOLDER = "the test holding the device"
LETS_GO = "the test lets go"


def _holder_of(path):
    """Who holds the lock file now (the ``what`` it wrote), or None when it is free."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return json.loads(path.read_text() or "{}").get("what", "someone")
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def _held_until_waited_for(device, events):
    """Hold ``device``'s lock in a thread until the run says it waits; yield the run's notify."""
    held, waited = threading.Event(), threading.Event()

    def hold():
        with device_lock(device, what=HOLDER, timeout_s=60):
            held.set()
            waited.wait(timeout=300)
            events.append(LETS_GO)

    def notify(line):
        if line.startswith(f"waiting for {device}: held by"):
            waited.set()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(timeout=60)
    try:
        yield notify
    finally:
        waited.set()
        thread.join(timeout=60)


def _record_builds(monkeypatch, events, lock_file):
    """Note, as each build (the candidate's, the trivial kernel's) begins, who holds the lock."""
    real = runner.build

    def recorder(kind):
        def build(*args, **kwargs):
            events.append(f"{kind} built under {_holder_of(lock_file)}")
            return real(*args, **kwargs)

        return build

    monkeypatch.setattr(runner, "build", recorder("candidate"))
    monkeypatch.setattr(baseline_prebuild, "build", recorder("trivial"))


def _settings():
    return RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                       scenario_ids=(SCENARIO,), lock_timeout_s=300)


def test_a_cpu_run_builds_only_once_it_holds_its_device(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    events = []
    _record_builds(monkeypatch, events, tmp_path / "cpu.lock")
    with _held_until_waited_for("cpu", events) as notify:
        verdict = evaluate(_settings(), notify=notify)
    assert verdict.status == "ok", failures_of(verdict)
    run = f"check cpu_attention {START_CPU}"
    assert events[0] == LETS_GO, events  # nothing compiled while the other run held the CPU
    assert sorted(events[1:]) == [f"candidate built under {run}", f"trivial built under {run}"]
    lock = verdict.lock
    assert lock is not None and lock.waited_for.endswith(HOLDER)
    assert lock.released_at is not None and lock.acquired_at <= lock.released_at


def test_a_cpu_run_that_cannot_get_its_device_fails_as_busy_and_builds_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    events = []
    _record_builds(monkeypatch, events, tmp_path / "cpu.lock")
    settings = dataclasses.replace(_settings(), lock_timeout_s=0.3)
    with device_lock("cpu", what=HOLDER, timeout_s=5):
        verdict = evaluate(settings)
    assert verdict.status == "error" and verdict.failure.code == Code.DEVICE_BUSY
    assert HOLDER in verdict.failure.reason and "\n" not in verdict.failure.reason
    assert [r.failure for r in verdict.results] == [verdict.failure]
    assert events == [] and verdict.build is None and verdict.lock is None


def test_a_gpu_run_builds_while_another_run_holds_its_device(tmp_path, monkeypatch):
    # the CPU target dressed as a GPU one: its device, its lock's key, no GPU needed to start
    real_target = runner.get_target

    def gpu_target(name):
        target = real_target(name)
        target.device = "cuda"
        target.device_key = lambda: "cuda-fake"
        return target

    monkeypatch.setattr(runner, "get_target", gpu_target)
    monkeypatch.setattr(runner, "environment_fault", lambda target, building: None)
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    lock_file = tmp_path / "cuda-fake.lock"
    events = []
    monkeypatch.setattr(locked, "check_scenarios",
                        lambda *a, **k: events.append("checked") or set())
    monkeypatch.setattr(locked, "_ceilings", lambda *args: None)
    monkeypatch.setattr(locked, "measure_scenarios", lambda *a, **k: events.append(
        f"judged under {_holder_of(lock_file)}"))
    _record_builds(monkeypatch, events, lock_file)
    with _held_until_waited_for("cuda-fake", events) as notify:
        verdict = evaluate(_settings(), notify=notify)
    assert verdict.failure is None, failures_of(verdict)
    run = f"check cpu_attention {START_CPU}"
    builds = sorted(f"{kind} built under {HOLDER}" for kind in ("candidate", "trivial"))
    assert sorted(events[:2]) == builds, events  # built beside the other run's measurement
    # checked beside other checkers once the measurement ended, then measured holding it alone
    assert events[2:] == [LETS_GO, "checked", f"judged under {run}"]
    shared, lock = verdict.check_lock, verdict.lock
    assert shared is not None and shared.mode == "shared" and shared.waited_for.endswith(HOLDER)
    assert lock is not None and lock.device == "cuda-fake" and lock.mode == "exclusive"
    assert shared.released_at <= lock.acquired_at
