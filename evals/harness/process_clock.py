"""Another process's CPU time, read from the kernel's own accounting, as a wall-clock check's meter.

On a CPU target the parent's wall clock is a poor witness on a busy host: while the worker waits
for a core, or the parent waits to be woken with the answer, the wall clock runs on (on a
two-core machine running other tests, every batch of an honest kernel came out at 3.5x its
timed median). The kernel counts the CPU time each process spends running, and the process
cannot forge that count: it advances only while the process's own threads run, and work done
in threads that exit stays in it. A forged in-process timer still shows, since the calls'
real work is the process's CPU time; waiting (the only thing the count leaves out) never
makes a CPU kernel faster. Linux exposes the count to other processes of the same user as a
POSIX CPU-time clock of the whole process (``clock_getcpuclockid``, whose id Python has no
wrapper for; threads that exited stay in it). (Per-thread figures in ``/proc/PID/task/*/
schedstat`` advance only at scheduler ticks while a thread runs: 4 ms steps, useless here.)

A request's figure is the smaller of the process's CPU time and the wall time it lasted. A
call whose work is W CPU-seconds, spread over t threads, cannot take less than W / t of
either: a single-threaded kernel is held to its CPU time, which a busy host does not inflate,
and a kernel on t threads (its CPU time t times its wall time) to its wall time, as its own
timer holds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["CpuMeter", "ProcessGone", "cpu_clock"]

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


class CpuMeter:
    """Times a request by a process's CPU time, or the wall time if less (see the module).

    Args:
        total: The process's whole-process CPU clock (:func:`cpu_clock`), seconds.
        wall: The parent's wall clock, seconds.
    """

    def __init__(
        self, total: Callable[[], float], wall: Callable[[], float] = time.perf_counter
    ) -> None:
        self.total, self.wall = total, wall

    @classmethod
    def of(cls, pid: int) -> CpuMeter | None:
        """The meter of process ``pid``, or None where the kernel offers no CPU clock."""
        total = cpu_clock(pid)
        return None if total is None else cls(total)

    def __call__(self, request: Callable[[], T]) -> tuple[float, T]:
        """Run ``request``; its seconds (see the class) and its answer."""
        wall0, cpu0 = self.wall(), self.total()
        answer = request()
        cpu1, wall1 = self.total(), self.wall()
        return min(cpu1 - cpu0, wall1 - wall0), answer
