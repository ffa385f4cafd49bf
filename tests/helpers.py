"""Shared paths and helpers for the tests."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
CPU_KERNELS = ROOT / "tests" / "data" / "cpu_attention"
START_CPU = ROOT / "kernels" / "cpu_attention" / "start.cpp"
BUILD_CACHE = ROOT / ".cache" / "test-cache"
LOCK_DIR = ROOT / ".cache" / "test-locks"


def run_harness(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m evals.harness ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "evals.harness", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env if env is not None else dict(os.environ),
    )


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, registered under ``name`` (its dataclasses look
    their module up while they are defined)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def failures_of(verdict) -> list[str]:
    """Why a verdict is not ok, for an assertion's message: the run's own failure, then each
    failed scenario's (id, code, reason)."""
    found = [f"run: {verdict.failure.code}: {verdict.failure.reason}"] if verdict.failure else []
    return found + [f"{r.scenario.id}: {r.failure.code}: {r.failure.reason}"
                    for r in verdict.results if r.failure is not None]


def check_held(scenario: dict, name: str) -> bool:
    """Whether a scenario's check ``name`` (in a verdict's JSON) passed: on a contract
    scenario a wall-clock check or the round audit may also have withheld unconfirmed times,
    and the round audit may have scaled a busy host's round (neither is a failure)."""
    found = scenario["checks"][name]
    clock = "wall_clock" in name or name == "round_audit"
    withheld = scenario["contract"] and clock and found.startswith("not counted")
    scaled = name == "round_audit" and found.startswith("scaled")
    return found.startswith("passed") or withheld or scaled
