"""Validate the harness's device time on a Hopper GPU and print the comparison tables.

Two checks on every scenario of a fa3_hopper suite (default: dev), with the harness's own
timing loop (``evals.harness.measurement.timing.measure``) and timer (``CudaEventTimer``):

- **Invariance**: FA3 as it is and FA3 wrapped with ``--host-us`` (200) microseconds of extra
  host work before each call give the same device time (within 2%), while their call latency
  differs by about the added host work.
- **Agreement**: FA3's and cuDNN's device times agree with the sum of their kernels' durations
  in a torch.profiler trace of the same calls (within 3% or 5 us, whichever is larger).

Writes ``device_time.json`` and ``device_time.md`` under ``--out`` and prints the tables and a
verdict line per check. Usage (on the GPU host, FA3 importable):
``python benchmarks/device_time.py --out results/measurements/h200/DATE``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from evals.harness.measurement.gpu import CudaEventTimer, describe_cuda_device
from evals.harness.measurement.timing import TimingSettings, measure
from evals.harness.scenarios import Scenario
from evals.harness.targets import get_target

INVARIANCE_TOLERANCE = 0.02
AGREEMENT_REL, AGREEMENT_ABS_US = 0.03, 5.0
PROFILED_CALLS = 5
CALL_RANGE = "device_time_call"
SETTINGS = TimingSettings(warmup=2, min_trials=20, max_trials=100, time_cap_s=2.0)


def with_host_work(fn: Callable[[], object], host_us: float) -> Callable[[], object]:
    """``fn`` preceded by ``host_us`` microseconds of busy work on the host."""

    def slow() -> object:
        end = time.perf_counter() + host_us / 1e6
        while time.perf_counter() < end:
            pass
        return fn()

    return slow


def time_scenario(scenario: Scenario, host_us: float, timer: CudaEventTimer) -> dict[str, Any]:
    """Device time and call latency of FA3, FA3 with extra host work, and cuDNN."""
    target = get_target("fa3_hopper")
    sets = target.make_timing_inputs(scenario, [11, 12, 13])
    impls: dict[str, list[Callable[[], object]]] = {}
    for name in ("fa3", "cudnn"):
        up = target.upstream(name)
        if up.unsupported_reason(scenario) is None:
            impls[name] = [up.prepare(s) for s in sets]
    impls["fa3_plus_host"] = [with_host_work(fn, host_us) for fn in impls["fa3"]]
    run = measure(impls, timer=timer, settings=SETTINGS, rng=random.Random(0))
    return {
        name: {
            "device_us": run.stats[name].median_us,
            "device_rse": run.stats[name].rse,
            "latency_us": run.latency[name].median_us,
            "issue_us": run.issue[name].median_us,
            "polluted": run.polluted[name],
            "spin_us": run.spin_us[name],
        }
        for name in impls
    }


def kernel_sums(scenario: Scenario, names: list[str]) -> dict[str, float]:
    """Median over profiled calls of the summed kernel durations (us) each call launched."""
    target = get_target("fa3_hopper")
    inputs = target.make_inputs(scenario, 11)
    calls = {n: target.upstream(n).prepare(inputs) for n in names}
    flush = torch.empty(
        4 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda"
    )
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(PROFILED_CALLS):
            for name, fn in calls.items():
                flush.zero_()
                torch.cuda.synchronize()
                with record_function(f"{CALL_RANGE}#{name}#{i}"):
                    fn()
                torch.cuda.synchronize()
    path = Path(f"/tmp/device_time_trace_{scenario.id}.json")
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    path.unlink()
    return _sum_by_call(events, names)


def _sum_by_call(events: list[dict[str, Any]], names: list[str]) -> dict[str, float]:
    """Kernel, memcpy and memset durations summed per call range, median per implementation."""
    ranges = [
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), str(e["name"]).split("#")[1])
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(CALL_RANGE)
    ]
    launch_ts = {
        e.get("args", {}).get("correlation"): float(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    sums: dict[tuple[str, float], float] = {(n, s): 0.0 for s, _, n in ranges}
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        t = launch_ts.get(e.get("args", {}).get("correlation"))
        for start, end, name in ranges:
            if t is not None and start <= t <= end:
                sums[(name, start)] += float(e.get("dur", 0))
    return {
        n: statistics.median(v for (name, _), v in sums.items() if name == n)
        for n in names
        if any(name == n for name, _ in sums)
    }


def main() -> int:
    """Run both checks on every scenario and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suite", default="dev")
    parser.add_argument("--host-us", type=float, default=200.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    target = get_target("fa3_hopper")
    timer = CudaEventTimer()
    rows = []
    for scenario in target.load_suite(args.suite).scenarios:
        timed = time_scenario(scenario, args.host_us, timer)
        sums = kernel_sums(scenario, [n for n in ("fa3", "cudnn") if n in timed])
        rows.append({"scenario": scenario.id, "timed": timed, "kernel_sum_us": sums})
        torch.cuda.empty_cache()
        print(_row_line(rows[-1], args.host_us), flush=True)
    doc = {
        "device": describe_cuda_device(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "fa3": target.upstream("fa3").version(),
        "host_us": args.host_us,
        "rows": rows,
    }
    (args.out / "device_time.json").write_text(json.dumps(doc, indent=1))
    report = render(rows, args.host_us)
    (args.out / "device_time.md").write_text(report + "\n")
    print(report)
    return 0


def _row_line(row: dict[str, Any], host_us: float) -> str:
    t = row["timed"]
    return (
        f"{row['scenario']}: fa3 {t['fa3']['device_us']:.1f} us, +{host_us:.0f} us host "
        f"{t['fa3_plus_host']['device_us']:.1f} us; latency {t['fa3']['latency_us']:.1f} / "
        f"{t['fa3_plus_host']['latency_us']:.1f} us; kernel sums {row['kernel_sum_us']}"
    )


def render(rows: list[dict[str, Any]], host_us: float) -> str:
    """Markdown tables and verdict lines for both checks."""
    inv = [
        "| scenario | FA3 device us | FA3 + host work device us | ratio | FA3 latency us | "
        "+ host work latency us | latency delta us |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    agree = [
        "| scenario | impl | harness device us | kernel sum us | diff us | diff % | ok |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    worst_ratio, deltas, agree_ok, agree_n = 0.0, [], 0, 0
    for row in rows:
        t, base = row["timed"], row["timed"]["fa3"]
        slow = t["fa3_plus_host"]
        ratio = slow["device_us"] / base["device_us"]
        delta = slow["latency_us"] - base["latency_us"]
        worst_ratio = max(worst_ratio, abs(ratio - 1))
        deltas.append(delta)
        inv.append(
            f"| {row['scenario']} | {base['device_us']:.1f} | {slow['device_us']:.1f} | "
            f"{ratio:.4f} | {base['latency_us']:.1f} | {slow['latency_us']:.1f} | "
            f"{delta:.1f} |"
        )
        for name, total in row["kernel_sum_us"].items():
            dev = t[name]["device_us"]
            diff = dev - total
            ok = abs(diff) <= max(AGREEMENT_REL * total, AGREEMENT_ABS_US)
            agree_ok, agree_n = agree_ok + ok, agree_n + 1
            agree.append(
                f"| {row['scenario']} | {name} | {dev:.1f} | {total:.1f} | {diff:.1f} | "
                f"{100 * diff / total:.1f} | {'yes' if ok else 'NO'} |"
            )
    verdicts = [
        f"invariance: worst device-time ratio deviation {100 * worst_ratio:.2f}% "
        f"({'PASS' if worst_ratio <= INVARIANCE_TOLERANCE else 'FAIL'} at 2%); latency delta "
        f"{min(deltas):.0f}-{max(deltas):.0f} us for {host_us:.0f} us of host work",
        f"agreement: {agree_ok}/{agree_n} within max(3%, 5 us) of the profiler's kernel sums "
        f"({'PASS' if agree_ok == agree_n else 'FAIL'})",
    ]
    return "\n".join(
        ["## Invariance", *inv, "", "## Agreement with the profiler", *agree, "", *verdicts]
    )


if __name__ == "__main__":
    sys.exit(main())
