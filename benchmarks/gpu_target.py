"""Benchmark the harness on a GPU target and print its figures.

Each step runs the harness CLI on ``--target`` (default ``fa3_hopper``), writes the verdict JSON
under ``--out`` and prints: wall time, build time, scenarios passed, geomean speedups, and the
peak GPU memory in use (nvidia-smi, sampled every 0.2 s). Steps:

- ``selfcheck-dev``: the target's headline upstream (FA3, FA4) judged against itself on the dev
  suite (must give 1.00 +/- 0.01).
- ``selfcheck-full``: the same on the full suite (gives every upstream per scenario).
- ``start-dev`` / ``start-full``: ``kernels/<target>/start.cu`` scored against the upstreams.

Usage: python benchmarks/gpu_target.py --out results/measurements/h200 selfcheck-dev start-dev
       KERNELSEEK_FA4_ARCH=sm_90a python benchmarks/gpu_target.py --target fa4_blackwell \
           --out DIR selfcheck-dev start-dev       # fa4_blackwell's dry run on a Hopper GPU

A step that cannot run (no CUDA GPU, no FA3, ...) ends the command: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from evals.targets import target_folder, target_folders

BUDGET_S = {
    "fa3_hopper": {"dev": 60.0, "full": 480.0},
    "fa4_blackwell": {"dev": 120.0, "full": 480.0},
}
"""Wall-time budget of one harness run by target and suite, excluding the build (the fa3_hopper
target's issue; fa4_blackwell's dev from the issue on FA4's self-check)."""
STEP_NAMES = ("selfcheck-dev", "selfcheck-full", "start-dev", "start-full")
MEMORY_BUDGET_GB = 60.0
"""GPU memory in use (both processes, nvidia-smi) that a run may never exceed; decimal GB."""


def step_args(target: str, step: str) -> list[str]:
    """The harness arguments of ``step`` on ``target`` (its upstream from its target.toml)."""
    kind, _, suite = step.partition("-")
    if kind == "start":
        return ["score", "--kernel", f"kernels/{target}/start.cu", "--suite", suite]
    upstream = target_folder(target).bench["defaults"]["upstream"]
    return ["bench", "--candidate-upstream", upstream, "--suite", suite]


class StepError(Exception):
    """A step could not run (no CUDA GPU, no FA3, a bad argument): one line for the user."""


class MemorySampler(threading.Thread):
    """Polls nvidia-smi for the GPU memory in use; keeps the maximum (MiB)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        """Sample until stopped."""
        while not self.stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                    check=True,
                ).stdout
                self.peak_mib = max(self.peak_mib, float(out.split()[0]))
            except (OSError, subprocess.SubprocessError, ValueError, IndexError):
                pass
            self.stop.wait(0.2)


def run_step(target: str, name: str, out_dir: Path, repeat: int) -> dict[str, object]:
    """Run one step and return its summary."""
    path = out_dir / (f"{name}.json" if repeat == 0 else f"{name}-{repeat + 1}.json")
    cmd = [
        sys.executable,
        "-m",
        "evals.harness",
        *step_args(target, name),
        "--target",
        target,
        "--json",
        str(path),
    ]
    sampler = MemorySampler()
    sampler.start()
    start = time.monotonic()
    with open(path.with_suffix(".progress.log"), "w") as progress:  # survives a kill
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=progress, text=True)
    wall = time.monotonic() - start
    sampler.stop.set()
    sampler.join()
    if proc.returncode == 2 or not path.is_file():  # bad invocation or environment: no figures
        said = path.with_suffix(".progress.log").read_text().strip().splitlines()
        last = said[-1] if said else f"the harness exited {proc.returncode} without a verdict"
        raise StepError(f"{name}: {last.removeprefix('error: ')}")
    print(proc.stdout[-6000:], flush=True)
    doc = json.loads(path.read_text())
    agg = doc["aggregates"]
    build_s = doc["timing"].get("build_s", 0.0)
    budget = BUDGET_S[target][doc["suite"]]
    peak_gb = sampler.peak_mib * 2**20 / 1e9
    summary = {
        "step": name,
        "target": target,
        "device": (doc.get("provenance") or {}).get("device"),
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "build_s": round(build_s, 1),
        "without_build_s": round(wall - build_s, 1),
        "budget_s": budget,
        "within_budget": wall - build_s < budget,
        "timing_s": {k: round(v, 1) for k, v in doc["timing"].items()},
        "passed": f"{agg['passed']}/{agg['scenarios']}",
        "geomean": {k: round(v, 4) if v else None for k, v in agg["geomean_speedup"].items()},
        "peak_gpu_mib": sampler.peak_mib,
        "peak_gpu_gb": round(peak_gb, 1),
        "memory_budget_gb": MEMORY_BUDGET_GB,
        "within_memory_budget": peak_gb < MEMORY_BUDGET_GB,
        "json": str(path),
        "peak_reserved_gib": {
            proc: max(
                (s["memory"].get(f"{proc}_peak_gib", 0.0) for s in doc["scenarios"]), default=0.0
            )
            for proc in ("worker", "harness")
        },
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return summary


def bytecode_note() -> str | None:
    """A warning when torch has no compiled bytecode: every harness process then compiles it."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    if (Path(spec.origin).parent / "__pycache__").is_dir():
        return None
    return (
        "note: torch has no compiled bytecode here, so the harness and its worker each compile "
        "it (seconds per process, counted in every figure); run once: python -m compileall -q "
        "-j 0 " + str(Path(spec.origin).parents[1])
    )


def main() -> int:
    """Run the requested steps; ``name*N`` repeats a step N times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    gpu_targets = [n for n, f in target_folders().items() if f.bench["device"] == "gpu"]
    parser.add_argument("--target", default="fa3_hopper", choices=gpu_targets)
    parser.add_argument("steps", nargs="+", help=f"of {list(STEP_NAMES)}, optionally NAME*N")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    note = bytecode_note()
    if note:
        print(note, flush=True)
    summaries = []
    for item in args.steps:
        name, _, times = item.partition("*")
        if name not in STEP_NAMES:
            parser.error(f"unknown step {name!r}")
        for i in range(int(times or 1)):
            try:
                summaries.append(run_step(args.target, name, args.out, i))
            except StepError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
    (args.out / "summary.json").write_text(json.dumps(summaries, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
