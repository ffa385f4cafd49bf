"""One measurement at a time per device: concurrent harness runs are serialised by a lock."""

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from evals.harness import Code
from evals.harness.failures import HarnessInputError
from evals.harness.measurement.device_lock import LOCK_DIR_ENV, LockRecord, device_lock
from tests.helpers import ROOT, START_CPU

SCENARIO = "smoke-fp32-d64-s128-h4-full"


def test_two_harness_runs_started_together_are_serialised(tmp_path):
    env = {**os.environ, LOCK_DIR_ENV: str(tmp_path / "locks")}
    procs = []
    for name in ("a", "b"):
        cmd = [sys.executable, "-m", "evals.harness", "check", "--target", "cpu_attention",
               "--kernel", str(START_CPU), "--suite", "smoke", "--scenario", SCENARIO,
               "--json", str(tmp_path / f"{name}.json")]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    locks = [json.loads((tmp_path / f"{n}.json").read_text())["lock"] for n in ("a", "b")]
    first, second = sorted(locks, key=lambda lk: lk["acquired_at"])
    assert first["device"] == second["device"] == "cpu"
    assert first["released_at"] <= second["acquired_at"]  # never judging at the same time
    assert second["waited_s"] > 0 and second["waited_for"].startswith("pid ")
    waiter = outputs[locks.index(second)][1]
    assert "waiting for cpu: held by pid" in waiter


def test_a_waiter_that_reads_the_lock_before_its_holder_names_itself_waits_for_the_name(
    tmp_path, monkeypatch
):
    # the race of a fresh-clone CI run: the holder had the lock but had not yet written
    # its name, and the waiter recorded "another run" for good
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    path = tmp_path / "cpu.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)

    def name_then_release():
        time.sleep(0.5)
        os.pwrite(fd, json.dumps({"pid": 4242, "what": "late namer"}).encode(), 0)
        time.sleep(0.5)
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)

    holder = threading.Thread(target=name_then_release)
    holder.start()
    heard = []
    try:
        with device_lock("cpu", what="waiter", timeout_s=10, notify=heard.append) as record:
            pass
    finally:
        holder.join()
        os.close(fd)
    assert heard == ["waiting for cpu: held by pid 4242: late namer"]
    assert record.waited_for == "pid 4242: late namer" and record.waited_s >= 0.9


def test_a_run_that_cannot_get_the_device_fails_as_busy_not_as_the_candidate(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    heard = []
    with device_lock("cpu", what="first run", timeout_s=5):
        start = time.monotonic()
        with (
            pytest.raises(HarnessInputError) as caught,
            device_lock("cpu", what="second run", timeout_s=0.3, notify=heard.append),
        ):
            pass
        assert time.monotonic() - start >= 0.3
    assert caught.value.failure.code == Code.DEVICE_BUSY
    assert "first run" in caught.value.failure.reason
    assert heard == [f"waiting for cpu: held by pid {os.getpid()}: first run"]
    with device_lock("cpu", what="third run", timeout_s=1) as record:  # free again
        assert record.waited_s < 1 and record.waited_for is None


def test_a_lock_record_reads_back_with_how_long_it_was_held(tmp_path, monkeypatch):
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    with device_lock("cpu", what="test", timeout_s=5, shared=True) as record:
        assert record.held_s == 0.0  # still held
    back = LockRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert back == record and back.mode == "shared"
    assert back.held_s == record.released_at - record.acquired_at >= 0
    # a record never taken, or malformed, holds nothing
    assert LockRecord.from_json(None).held_s == 0.0
    assert LockRecord.from_json({"acquired_at": "soon", "released_at": 5}).held_s == 0.0
