"""Another process's CPU time, read from the kernel's own accounting, as a wall-clock check's meter.

On a CPU target the parent's wall clock is a poor witness on a busy host: while the worker waits
for a core, or the parent waits to be woken with the answer, the wall clock runs on (on a
two-core machine running other tests, every batch of an honest kernel came out at 3.5x its
timed median). The kernel counts the CPU time each thread spends running, and the process
cannot forge that count: it advances only while the thread runs. A forged in-process timer
still shows, since the calls' real work is CPU time; waiting (the only thing the count leaves
out) never makes a CPU kernel faster.

A request's figure is its critical path: the most CPU time any one of the worker's threads
ran during it (``/proc/PID/task/TID/schedstat``, exact for a thread that is not running at
the moment it is read, as the worker's are between requests), plus whatever CPU time of the
whole process (its POSIX CPU-time clock, ``clock_getcpuclockid``'s id: exact, threads that
exited included) the threads' figures do not account for, and never more than the wall time
the request lasted. A call whose work is W CPU-seconds spread over t threads cannot finish in
less than W / t, which is what the busiest thread ran at least: a single-threaded kernel is
held to its CPU time and a kernel on the worker's OpenMP threads to its busiest thread's,
neither inflated by a busy host's waits. (The whole process's CPU time alone, the figure
before, adds the threads up: a kernel on two threads under load, each also spinning at
barriers for a partner waiting for a core, came out at 3x its timed median, and the wall
time was no better.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["CpuMeter", "ProcessGone", "cpu_clock", "thread_times"]

_CPUCLOCK_SCHED = 2
"""Linux's CPU-time clock kind counting the scheduler's runtime, nanosecond resolution."""


class ProcessGone(Exception):
    """The process whose CPU time was read has exited."""


def cpu_clock(pid: int) -> Callable[[], float] | None:
    """A clock of the CPU seconds process ``pid`` has run (all its threads), or None.

    None where the kernel offers no such clock (not Linux, or the process is gone). The
    clock raises :class:`ProcessGone` once the process has exited.
    """
    clock_id = ((~pid) << 3) | _CPUCLOCK_SCHED  # Linux's MAKE_PROCESS_CPUCLOCK
    try:
        time.clock_gettime(clock_id)
    except (OSError, OverflowError, AttributeError):
        return None

    def read() -> float:
        try:
            return time.clock_gettime(clock_id)
        except OSError as exc:
            raise ProcessGone(f"process {pid} has exited") from exc

    return read


def thread_times(pid: int) -> dict[int, int]:
    """Nanoseconds each thread of process ``pid`` has run, by thread id ({} where unreadable)."""
    times: dict[int, int] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                times[int(tid)] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):  # the thread exited: the process clock has it
            continue
    return times


class CpuMeter:
    """Times a request by its critical path of CPU time, or the wall time if less (module).

    Args:
        total: The process's whole-process CPU clock (:func:`cpu_clock`), seconds.
        wall: The parent's wall clock, seconds.
        threads: Nanoseconds run by each of the process's threads (:func:`thread_times`);
            without it the whole process's CPU time is the figure.
    """

    def __init__(
        self,
        total: Callable[[], float],
        wall: Callable[[], float] = time.perf_counter,
        threads: Callable[[], dict[int, int]] | None = None,
    ) -> None:
        self.total, self.wall, self.threads = total, wall, threads

    @classmethod
    def of(cls, pid: int) -> CpuMeter | None:
        """The meter of process ``pid``, or None where the kernel offers no CPU clock."""
        total = cpu_clock(pid)
        if total is None:
            return None
        return cls(total, threads=(lambda: thread_times(pid)) if thread_times(pid) else None)

    def __call__(self, request: Callable[[], T]) -> tuple[float, T]:
        """Run ``request``; its seconds (see the class) and its answer."""
        before = self.threads() if self.threads is not None else {}
        wall0, cpu0 = self.wall(), self.total()
        answer = request()
        cpu1, wall1 = self.total(), self.wall()
        cpu = cpu1 - cpu0
        if self.threads is not None:
            after = self.threads()
            ran = [(ns - before.get(tid, 0)) / 1e9 for tid, ns in after.items()]
            busiest = max(ran, default=0.0)
            cpu = min(cpu, busiest + max(0.0, cpu - sum(ran)))
        return min(cpu, wall1 - wall0), answer
