"""The worker's CPU time as the kernel counts it (``evals.harness.process_clock``)."""

import subprocess
import sys
import time

import pytest

from evals.harness.process_clock import CpuMeter, ProcessGone, cpu_clock

BUSY_THEN_IDLE = """
import sys, time
end = time.perf_counter() + 0.3
while time.perf_counter() < end:
    pass
sys.stdout.write("busy done\\n"); sys.stdout.flush()
time.sleep(30)
"""


def _child():
    return subprocess.Popen(
        [sys.executable, "-c", BUSY_THEN_IDLE], stdout=subprocess.PIPE, text=True
    )


def test_a_processs_cpu_time_grows_while_it_runs_and_not_while_it_waits():
    proc = _child()
    try:
        clock = cpu_clock(proc.pid)
        if clock is None:
            pytest.skip("this kernel offers no per-process CPU clock")
        proc.stdout.readline()  # its busy loop is over
        busy = clock()
        time.sleep(0.3)
        idle = clock() - busy
        # 0.3 s of spinning counted (less any time it waited for a core), the sleep not
        assert busy > 0.05 and idle < busy / 5, (busy, idle)
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(ProcessGone):
        clock()


def test_the_meter_takes_the_smaller_of_cpu_and_wall_time():
    cpu = iter([1.0, 1.5])  # 0.5 s of CPU time
    wall = iter([10.0, 10.2])  # over 0.2 s: a kernel on three threads
    meter = CpuMeter(total=lambda: next(cpu), wall=lambda: next(wall))
    seconds, answer = meter(lambda: "answer")
    assert answer == "answer" and seconds == pytest.approx(0.2)
    cpu = iter([1.0, 1.1])  # a busy host: 0.1 s of work took 0.4 s
    wall = iter([10.0, 10.4])
    meter = CpuMeter(total=lambda: next(cpu), wall=lambda: next(wall))
    assert meter(lambda: None)[0] == pytest.approx(0.1)


def test_no_meter_for_a_process_that_is_gone():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert CpuMeter.of(proc.pid) is None
