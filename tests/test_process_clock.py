"""The worker's CPU time as the kernel counts it (``evals.harness.measurement.process_clock``)."""

import subprocess
import sys
import time

import pytest

from evals.harness.measurement.process_clock import CpuMeter, ProcessGone, cpu_clock

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


TWO_THREADS = """
import sys, threading, time
def busy(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
go, done, job = threading.Event(), threading.Event(), [0.0]
def pool():  # a persistent second thread, as the worker's OpenMP pool
    while True:
        go.wait(); go.clear(); busy(job[0]); done.set()
threading.Thread(target=pool, daemon=True).start()
for line in sys.stdin:  # a request: that much work, half on each thread
    job[0] = float(line) / 2
    go.set(); busy(float(line) / 2); done.wait(); done.clear()
    sys.stdout.write("done\\n"); sys.stdout.flush()
"""


def test_a_kernel_on_two_threads_is_held_to_its_busiest_thread_not_their_sum():
    # a busy host's waits inflate the wall clock (here a fake one, ten times slow); the whole
    # process's CPU time adds both threads up; the busiest thread ran what the request cost
    proc = subprocess.Popen([sys.executable, "-c", TWO_THREADS], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        meter = CpuMeter.of(proc.pid)
        if meter is None or meter.threads is None:
            pytest.skip("this kernel offers no CPU clocks of another process")
        real_wall = meter.wall
        meter.wall = lambda: 10 * real_wall()
        total = meter.total

        def request():
            proc.stdin.write("0.2\n")
            proc.stdin.flush()
            return proc.stdout.readline()

        before = total()
        seconds, answer = meter(request)
        whole = total() - before
        assert answer == "done\n"
        assert whole == pytest.approx(0.2, rel=0.25)  # both threads' work
        assert 0.4 * whole < seconds < 0.7 * whole, (seconds, whole)
    finally:
        proc.kill()
        proc.wait()


def test_cpu_time_no_thread_accounts_for_counts_on_the_critical_path():
    # a thread that exited during the request (or one read while it ran) leaves time only in
    # the process's clock: it is added to the busiest thread's, never dropped
    cpu = iter([1.0, 1.5])  # 0.5 s in all
    threads = iter([{1: 0, 2: 0}, {1: int(0.2e9), 2: int(0.1e9)}])  # 0.3 s accounted for
    meter = CpuMeter(total=lambda: next(cpu), wall=iter([0.0, 9.0]).__next__,
                     threads=lambda: next(threads))
    assert meter(lambda: None)[0] == pytest.approx(0.2 + 0.2)
