"""The ``profile`` tool: where the time goes, per scenario (and ncu on GPU targets).

One evaluation of the budget, like ``bench``; the autonomous arm gives it to the agent.
"""

from __future__ import annotations

from inspect_ai.tool import Tool, tool
from inspect_ai.util import sandbox

from evals.bench.config.budget import budgeted_harness
from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import bench_target
from evals.harness.tracing.ncu import ncu_command
from evals.harness.verdict.record import Verdict

__all__ = ["breakdown", "profile"]


def breakdown(verdict: Verdict, upstream: str) -> str:
    """Per scenario: time, share of the suite's time, TFLOP/s, GB/s, speedup; slowest first."""
    rows = []
    for r in verdict.results:
        cand = r.times.get("candidate")
        if cand:
            speed = r.speedups().get(upstream)
            tflops = r.flops / cand.median_us / 1e6  # as the verdict's JSON gives them
            gbps = r.bytes / cand.median_us / 1e3
            rows.append((cand.median_us, r.scenario.id, tflops or 0.0, gbps or 0.0, speed))
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


async def _ncu(settings: TaskSettings, verdict: Verdict) -> str:
    scen = [r for r in verdict.results if r.times]
    if not scen:
        return "ncu: no timed scenario"
    slowest = max(scen, key=lambda r: r.times["candidate"].median_us)
    cmd = ncu_command(
        settings.harness_command(),
        target=settings.target,
        kernel=settings.kernel_file,
        suite=settings.suite,
        scenario=slowest.scenario.id,
    )
    try:
        result = await sandbox().exec(cmd, timeout=settings.check_timeout)
    except Exception as exc:
        return f"ncu unavailable: {type(exc).__name__}: {exc}"
    return f"ncu ({slowest.scenario.id}):\n{(result.stdout or result.stderr)[-4000:]}"
