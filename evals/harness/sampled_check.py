"""The integrity checks' accuracy test: every element against the baseline, a block against float64.

Verification holds a scenario's outputs to the accuracy rule over whole outputs. The checks
that follow it (the anti-caching probes, the timed outputs, the wall-clock batches) ask a
narrower question of outputs the candidate made later: did this call do its work, right, on
these inputs? On a large scenario their float64 references were most of a run's time, so
there each output is held

- to the accuracy rule exactly on a block of consecutive KV heads (and their query heads)
  drawn after the output was received, against a float64 reference of that block alone, and
- everywhere, to the baseline's output on the same inputs (the baseline runs on the whole
  input; it is cheap): no element may differ from it by more than a correct output can, by
  the block's figures (the candidate's allowed error plus the baseline's own, with half again
  of slack for elements outside the block), and none may be NaN or Inf.

An output that skipped work, reused an earlier result or went wrong anywhere is far from the
baseline; one that is less accurate than the rule allows everywhere fails the block; what
escapes is an output within about 4.5x the baseline's error outside a block it could not know,
which buys no speed worth having (THREATS.md). Small scenarios, targets that cannot cut their
inputs by heads, and inputs the baseline cannot run (the rounded reference stands in there)
are checked whole, as before.
"""

from __future__ import annotations

import math
import random

import torch

from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.session import check_each
from evals.harness.targets import Inputs, Target
from evals.harness.verify import check_meta, check_values

__all__ = ["BLOCK_SHARE", "SAMPLE_FROM_FLOPS", "SLACK", "check_sampled"]

SAMPLE_FROM_FLOPS = 1e10
"""Scenarios of fewer FLOPs a call are checked whole: their reference costs little."""
BLOCK_SHARE = 8
"""The block holds at least 1/8 of the KV heads (and at least one)."""
SLACK = 1.5
"""How far the baseline's error outside the block may exceed its error inside."""


def check_sampled(
    target: Target, scenario: Scenario, outs: list[torch.Tensor], inputs: Inputs, *, seed: int
) -> list[Failure | None]:
    """Each of ``outs`` (all computed from ``inputs``) by the rule above; None where it passes.

    Args:
        target: The target.
        scenario: The scenario the outputs are for.
        outs: The candidate's outputs, each ``expected_output(scenario)``-shaped.
        inputs: The inputs they were computed from (a baseline may append to a cache in them).
        seed: Draws the block; derived from the run's secret seed after the outputs arrived.
    """
    spec = target.expected_output(scenario)
    failures: list[Failure | None] = [check_meta(out, spec) for out in outs]
    block = _draw_block(target, scenario, seed)
    if block is None or all(f is not None for f in failures):
        return check_each(target, scenario, outs, inputs)
    kv, q = block
    sub_scenario, sub_inputs = target.head_block(scenario, inputs, kv)
    reference = target.reference(sub_scenario, sub_inputs)  # before the baseline appends
    try:
        baseline = target.upstream(target.accuracy.baseline).prepare(inputs)()
    except Exception:
        if not scenario.contract:
            raise
        baseline = None
    if baseline is None or not bool(torch.isfinite(baseline).all()):
        return check_each(target, scenario, outs, inputs)  # the rounded reference stands in
    dtype = str(spec.dtype).removeprefix("torch.")
    value_scale = target.value_scale(scenario)
    for i, out in enumerate(outs):
        if failures[i] is not None:
            continue
        inside = check_values(
            out[..., q, :],
            reference=reference,
            baseline=baseline[..., q, :],
            rule=target.accuracy,
            dtype=dtype,
            value_scale=value_scale,
        )
        failures[i] = inside.failure or _against_baseline(
            out, baseline, target, dtype, SLACK * inside.baseline_error, value_scale
        )
    return failures


def _draw_block(target: Target, scenario: Scenario, seed: int) -> tuple[slice, slice] | None:
    """The KV heads and query heads of a random block, or None to check the whole output."""
    heads = target.heads(scenario)
    if heads is None or target.work(scenario).flops < SAMPLE_FROM_FLOPS:
        return None
    heads_q, heads_kv = heads
    size = max(1, math.ceil(heads_kv / BLOCK_SHARE))
    if size >= heads_kv:
        return None
    start = random.Random(seed).randrange(heads_kv - size + 1)
    group = heads_q // heads_kv
    return slice(start, start + size), slice(start * group, (start + size) * group)


def _against_baseline(
    out: torch.Tensor,
    baseline: torch.Tensor,
    target: Target,
    dtype: str,
    baseline_error: float,
    value_scale: float,
) -> Failure | None:
    """Every element of ``out`` within what a correct output can differ from the baseline's."""
    values = out.float()
    nonfinite = int((~torch.isfinite(values)).sum())
    if nonfinite:
        reason = f"{nonfinite} of {values.numel()} output elements are NaN or Inf"
        return Failure(Code.NAN_INF, reason)
    # |out - ref| <= tolerance and |baseline - ref| <= baseline_error bound |out - baseline|
    allowed = target.accuracy.tolerance(dtype, baseline_error, value_scale) + baseline_error
    diff = (values - baseline.float()).abs_()
    worst = float(diff.max())
    if worst <= allowed:
        return None
    where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    reason = (
        f"max abs difference {worst:.3g} from {target.accuracy.baseline}'s output at {where} "
        f"exceeds what a correct output can differ by ({allowed:.3g})"
    )
    return Failure(Code.INACCURATE, reason)
