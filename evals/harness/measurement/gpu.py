"""GPU timing and device facts: CUDA events with an L2 flush, measured ceilings, clocks.

Host-overhead policy (one policy for candidate and upstreams alike): every call is issued
eagerly, without CUDA graphs. Before each timed call the L2 is flushed and the device
synchronised; then a spin kernel keeps the GPU busy while the host records the start event
and issues the call, so the interval between the two events is **device time**: all GPU work
the call enqueued on the current stream and the gaps between its kernels, none of the host's
issue work (FA3's Python interface spends 90-270 us of it per call, SDPA 55-145 us, a
candidate's ``torch.ops`` call 12-46 us on an H200). Whether the spin really hid that work is
checked on every call (:meth:`CudaEventTimer.time_call`). The host-inclusive **call latency**
(the same events without the spin) is measured separately and only displayed.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from evals.harness.measurement.timing import CallTime

CACHE_KEEP_BYTES = 8 << 30
"""GPU memory a process's caching allocator may keep between requests. More is handed back
(two processes share the GPU's memory budget); less is kept, because handing memory back and
allocating it again costs time on every request (it was churned on every one before)."""
FLUSH_FACTOR = 4
"""The flush buffer is this many times the L2 size (at least twice, as required)."""
FLOOR_HEADROOM = 1.25
"""How far above the measured ceilings an honest kernel may run before its time is implausible.

The ceilings are what torch's own matmul and copy kernels reach, not what the chip can: on the
H200, FA3, cuDNN and FA2 decode kernels ran up to 8% faster than the copy rate allows
(``results/measurements/h200/2026-11-30-d``: reading far more than they write), and the spec
peaks are about 1.15x (HBM) and 1.25x (dense bf16) the measured ones. Reused or skipped work
runs many times under any such floor."""


CALIBRATION_CYCLES = 1_000_000
"""Spin-kernel cycles timed once per timer to convert microseconds into cycles."""


def spin(cycles: int) -> None:
    """Keep the current stream's GPU busy for about ``cycles`` SM clock cycles.

    torch's ``torch.cuda._sleep`` (a one-thread busy-wait kernel, used by torch's own tests);
    private, so it is wrapped here alone, and ``tests/test_gpu_timer.py`` fails loudly if a
    torch upgrade removes it.
    """
    torch.cuda._sleep(int(cycles))  # type: ignore[no-untyped-call]


def _new_event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


class CudaEventTimer:
    """Times one call with CUDA events: L2 flushed, host issue work hidden behind a spin."""

    def __init__(self, device: torch.device | None = None) -> None:
        device = device or torch.device("cuda", torch.cuda.current_device())
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.flush_bytes = max(FLUSH_FACTOR * l2, 64 << 20)
        self._flush = torch.empty(self.flush_bytes, dtype=torch.uint8, device=device)
        self._spin, self._start, self._end = _new_event(), _new_event(), _new_event()
        self.cycles_per_us = self._calibrate()

    def _calibrate(self) -> float:
        """SM cycles per microsecond of the spin kernel (the faster of two timings)."""
        best = math.inf
        for _ in range(2):
            torch.cuda.synchronize()
            self._spin.record()
            spin(CALIBRATION_CYCLES)
            self._start.record()
            self._start.synchronize()
            best = min(best, float(self._spin.elapsed_time(self._start)) * 1000.0)
        return CALIBRATION_CYCLES / max(best, 1.0)

    def time_call(self, fn: Callable[[], object], *, spin_us: float) -> CallTime:
        """Flush L2, synchronise, spin ``spin_us``, then time ``fn`` between two events.

        The host's work from the spin's launch to the end event's record (``issue_us`` is
        the call's own share) must take less than the spin ran: the spin cannot start on
        the GPU before the host begins launching it, so the host was done before the spin
        ended and the GPU never idled inside the interval. Otherwise the call is marked not
        ``hidden``. With ``spin_us`` 0 there is no spin and the call counts as not hidden.
        """
        self._flush.zero_()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if spin_us > 0:
            self._spin.record()
            spin(int(spin_us * self.cycles_per_us))
        self._start.record()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        self._end.record()
        t3 = time.perf_counter()
        self._end.synchronize()
        device_us = float(self._start.elapsed_time(self._end)) * 1000.0
        hidden = False
        if spin_us > 0:
            spun_us = float(self._spin.elapsed_time(self._start)) * 1000.0
            hidden = (t3 - t0) * 1e6 < spun_us
        return CallTime(device_us=device_us, issue_us=(t2 - t1) * 1e6, hidden=hidden)

    def latency_us(self, fn: Callable[[], object]) -> float:
        """Flush L2, synchronise, then time ``fn`` as issued: host work included."""
        self._flush.zero_()
        torch.cuda.synchronize()
        self._start.record()
        fn()
        self._end.record()
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end)) * 1000.0

    def device_us(self, fn: Callable[[], object]) -> float:
        """Device time of one call of ``fn`` with a spin long enough for a large op (5 ms)."""
        return self.time_call(fn, spin_us=5000.0).device_us


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings used for roofline floors.

    Attributes:
        matmul_tflops: Dense bf16 matmul throughput (8192^3, cuBLAS through torch).
        copy_gbps: Device-to-device copy bandwidth, bytes read plus written, GB/s.
        headroom: Factor by which a kernel may beat both ceilings before it is implausible.
    """

    matmul_tflops: float
    copy_gbps: float
    headroom: float = FLOOR_HEADROOM

    def floor_us(self, flops: float, nbytes: float, *, fp8: bool = False) -> float:
        """The least time a call doing ``flops`` and moving ``nbytes`` can take (microseconds).

        Both ceilings are raised by ``headroom`` (see :data:`FLOOR_HEADROOM`); fp8 work is
        credited twice the bf16 matmul rate (Hopper's fp8 tensor-core rate).
        """
        peak = self.matmul_tflops * (2.0 if fp8 else 1.0) * self.headroom
        return max(flops / (peak * 1e6), nbytes / (self.copy_gbps * self.headroom * 1e3))


def release_cached_memory(keep_bytes: int = CACHE_KEEP_BYTES) -> None:
    """Hand the caching allocator's unused GPU memory back once it holds over ``keep_bytes``."""
    if torch.cuda.memory_reserved() > keep_bytes:
        torch.cuda.empty_cache()


def measure_ceilings(reps: int = 10) -> Ceilings:
    """Measure bf16 matmul TFLOP/s and copy GB/s on the current device (best of ``reps``)."""
    ceilings = _measure(CudaEventTimer(), reps)
    torch.cuda.empty_cache()
    return ceilings


def _measure(timer: CudaEventTimer, reps: int) -> Ceilings:
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(1 << 28, device="cuda", dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(src)
    for _ in range(3):
        torch.matmul(a, b)
        dst.copy_(src)
    mm = min(timer.device_us(lambda: torch.matmul(a, b)) for _ in range(reps))
    cp = min(timer.device_us(lambda: dst.copy_(src)) for _ in range(reps))
    return Ceilings(matmul_tflops=2 * n**3 / mm / 1e6, copy_gbps=2 * src.nbytes / cp / 1e3)


def device_state() -> dict[str, Any]:
    """SM clock (MHz), temperature (C) and memory in use, read with nvidia-smi."""
    query = "clocks.sm,clocks.max.sm,temperature.gpu,memory.used,power.draw"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return {}
    keys = ["sm_clock_mhz", "max_sm_clock_mhz", "temperature_c", "memory_used_mib", "power_w"]
    values: dict[str, Any] = {}
    for key, raw in zip(keys, out.split(","), strict=False):
        try:
            values[key] = float(raw)
        except ValueError:
            values[key] = raw.strip()
    return values


def cuda_device_key() -> str:
    """``cuda-<uuid>`` of the current device (``cuda-<index>`` where torch gives no UUID)."""
    index = torch.cuda.current_device()
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return f"cuda-{uuid}" if uuid is not None else f"cuda-{index}"


def describe_cuda_device() -> dict[str, Any]:
    """Name, SM count, L2 size, memory and driver of the current CUDA device."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    driver = None
    with contextlib.suppress(OSError, subprocess.SubprocessError, IndexError):
        driver = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
            .stdout.strip()
            .splitlines()[0]
        )
    return {
        "name": props.name,
        "sms": props.multi_processor_count,
        "l2_bytes": props.L2_cache_size,
        "memory_bytes": props.total_memory,
        "capability": f"{props.major}.{props.minor}",
        "driver": driver,
    }
