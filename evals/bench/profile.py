"""The ``profile`` tool: where the time goes, per scenario (and ncu on GPU targets).

One evaluation of the budget, like ``bench``; the autonomous arm gives it to the agent.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.tool import Tool, tool
from inspect_ai.util import sandbox

from evals.bench.budget import budgeted_harness
from evals.bench.settings import TaskSettings
from evals.bench.targets import bench_target
from evals.harness.measurement.ncu import ncu_command

__all__ = ["breakdown", "profile"]


def breakdown(verdict: dict[str, Any], upstream: str) -> str:
    """Per scenario: time, share of the suite's time, TFLOP/s, GB/s, speedup; slowest first."""
    rows = []
    for s in verdict.get("scenarios", []):
        cand = s.get("times_us", {}).get("candidate")
        if cand:
            speed = (s.get("speedup") or {}).get(upstream)
            rows.append(
                (cand["median_us"], s["id"], s.get("tflops") or 0.0, s.get("gbps") or 0.0, speed)
            )
    total = sum(r[0] for r in rows) or 1.0
    lines = ["scenario  time_us  share  TFLOP/s  GB/s  speedup"]
    for us, sid, tf, gb, sp in sorted(rows, reverse=True):
        lines.append(
            f"{sid}  {us:.1f}  {us / total:.1%}  {tf:.3f}  {gb:.1f}  {sp:.3f}x"
            if sp
            else f"{sid}  {us:.1f}  {us / total:.1%}"
        )
    return "\n".join(lines)


@tool
def profile(settings: TaskSettings) -> Tool:
    """Where the time goes: per-scenario throughput (and ncu on GPUs)."""

    async def execute() -> str:
        """Profile your kernel on the dev suite.

        Returns:
            Per scenario (slowest first): time, share of the total, TFLOP/s, GB/s and speedup;
            on GPU targets also an Nsight Compute SpeedOfLight summary of the slowest scenario.
        """
        run = await budgeted_harness(
            settings, "bench", suite=settings.suite, timeout=settings.check_timeout
        )
        if run.verdict is None:
            return f"profile failed: {run.error}\n{run.table[-2000:]}"
        text = breakdown(run.verdict, settings.upstream)
        if bench_target(settings.target).device == "gpu":
            text += "\n\n" + await _ncu(settings, run.verdict)
        return text

    return execute


async def _ncu(settings: TaskSettings, verdict: dict[str, Any]) -> str:
    scen = [s for s in verdict.get("scenarios", []) if s.get("times_us")]
    if not scen:
        return "ncu: no timed scenario"
    slowest = max(scen, key=lambda s: s["times_us"]["candidate"]["median_us"])
    cmd = ncu_command(
        settings.harness_command(),
        target=settings.target,
        kernel=settings.kernel_file,
        suite=settings.suite,
        scenario=slowest["id"],
    )
    try:
        result = await sandbox().exec(cmd, timeout=settings.check_timeout)
    except Exception as exc:
        return f"ncu unavailable: {type(exc).__name__}: {exc}"
    return f"ncu ({slowest['id']}):\n{(result.stdout or result.stderr)[-4000:]}"
