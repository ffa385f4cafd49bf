"""The candidate's process holding the device lock folder's locks fails its run (lock_tamper).

The worker may open files read-only and call ``flock``: from a library initialiser it can take
the device's gate or lock, and its run (and every other run on the device) would wait until it
failed as busy, an error rather than the candidate's failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.failures import HarnessInputError
from evals.harness.judging import judge_locked
from evals.harness.measurement.device_lock import LOCK_DIR_ENV, device_lock
from evals.harness.sandbox.lock_tamper import held_by, lock_holders, tamper_failure
from tests.helpers import ROOT

CHEAT = ROOT / "tests" / "cheats" / "cpu_attention" / "lock_squat.cpp"
LOCKS = """\
1: FLOCK  ADVISORY  WRITE 4449 fe:00:2146448 0 EOF
1: -> FLOCK  ADVISORY  WRITE 5000 fe:00:2146448 0 EOF
2: FLOCK  ADVISORY  READ  4449 00:2e:77 0 EOF
3: POSIX  ADVISORY  WRITE 12 fe:00:99 0 EOF
garbage line
"""


def test_holders_are_read_and_waiters_left_out():
    assert lock_holders(LOCKS) == {2146448: {4449}, 77: {4449}, 99: {12}}


@pytest.fixture
def holder(tmp_path):
    """A process that holds ``tmp_path/cuda-x.gate`` exclusive (as a squatting worker would)."""
    path = tmp_path / "cuda-x.gate"
    code = (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(path)!r}, os.O_RDONLY | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    proc.kill()
    proc.wait()


def test_a_lock_held_in_the_folder_is_named_for_its_holder_only(tmp_path, holder):
    (tmp_path / "cuda-x.lock").touch()
    assert held_by(holder.pid, tmp_path) == ["cuda-x.gate"]
    assert held_by(holder.pid + 100000, tmp_path) == []
    assert judge_locked._tampering(SimpleNamespace(proc=None)) is None  # no worker, no pid
    failure = tamper_failure(holder.pid, tmp_path)
    assert failure is not None and failure.code == Code.SANDBOX_VIOLATION
    assert "cuda-x.gate" in failure.reason


def test_the_guard_ends_a_wait_on_the_candidates_own_lock(tmp_path, monkeypatch, holder):
    # without the guard this wait would last its whole timeout and end as device_busy
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    t0 = time.monotonic()
    guard = lambda: tamper_failure(holder.pid, tmp_path)  # noqa: E731
    with pytest.raises(HarnessInputError) as raised, device_lock(
        "cuda-x", what="test", timeout_s=600, guard=guard
    ):
        pass
    assert raised.value.failure.code == Code.SANDBOX_VIOLATION
    assert time.monotonic() - t0 < 300


def test_a_kernel_that_squats_on_the_lock_folder_fails_its_run(tmp_path, monkeypatch):
    locks = tmp_path / "locks"
    monkeypatch.setenv(LOCK_DIR_ENV, str(locks))
    log = tmp_path / "worker.log"
    verdict = evaluate(
        RunSettings("bench", "cpu_attention", CHEAT, suite="smoke", keep_worker_log=log)
    )
    assert "kernelseek-cheat: locked cpu.gate" in log.read_text()  # the squat itself worked
    assert verdict.checks["symbols"].startswith("passed")
    assert verdict.status == "failed" and verdict.failure is not None
    assert verdict.failure.code == Code.SANDBOX_VIOLATION
    assert "held a lock on cpu.gate" in verdict.failure.reason
    # its worker is gone, and the device is free for the next run at once
    with device_lock("cpu", what="next run", timeout_s=30) as record:
        assert record.waited_for is None
