"""The integrity checks' accuracy test: every element against the baseline, a block against float64.

Verification holds a scenario's outputs to the accuracy rule over whole outputs. The checks
that follow it (the anti-caching probes, the timed outputs, the wall-clock batches) ask a
narrower question of outputs the candidate made later: did this call do its work, right, on
these inputs? On a large scenario their float64 references were most of a run's time, so
there each output is held

- to the accuracy rule exactly on a block of consecutive KV heads (and their query heads)
  drawn after the output was received, against a float64 reference of that block alone, and
- everywhere, to the baseline's output on the same inputs (the baseline runs on the whole
  input; it is cheap): no element may differ from it by more than the block's absolute
  figures (the candidate's allowed error plus the baseline's own) plus a share of its row's
  magnitude (:data:`ROW_SHARE`: heads and rows differ in scale, by fp8 descales or by the
  probe's rewritten keys, and errors scale with them), and none may be NaN or Inf.

An output that skipped work, reused an earlier result or went wrong anywhere is a whole row's
magnitude from the baseline; one that is less accurate than the rule allows everywhere fails
the block; what escapes is an output within that share of its rows outside a block it could not
know, which buys no speed worth having (THREATS.md). Small scenarios, targets that cannot cut their
inputs by heads, and inputs the baseline cannot run (the rounded reference stands in there)
are checked whole, as before.
"""

from __future__ import annotations

import math
import random

import torch

from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs, Target
from evals.harness.verification.verify import check_each, check_meta, check_output

__all__ = ["BLOCK_SHARE", "ROW_SHARE", "SAMPLE_FROM_FLOPS", "check_sampled"]

SAMPLE_FROM_FLOPS = 1e10
"""Scenarios of fewer FLOPs a call are checked whole: their reference costs little."""
BLOCK_SHARE = 8
"""The block holds at least 1/8 of the KV heads (and at least one)."""
ROW_SHARE = {1: 0.5, 2: 1 / 16, 4: 1 / 16}
"""Outside the block, the share of a row's magnitude (its largest baseline element) by which an
element may differ from the baseline, by the inputs' element size: fp8 (1 byte) rounds
probabilities and values to 3 mantissa bits, bf16 to 8 (honest kernels differ from the
baseline by well under these; a skipped or stale row differs by about its whole magnitude)."""


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
    share = ROW_SHARE[inputs["q"].element_size()]
    for i, out in enumerate(outs):
        if failures[i] is not None:
            continue
        inside = check_output(target, scenario, out[..., q, :], reference, baseline[..., q, :])
        failures[i] = inside.failure or _against_baseline(
            out, baseline, target, inside.tolerance + inside.baseline_error, share
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
    out: torch.Tensor, baseline: torch.Tensor, target: Target, absolute: float, share: float
) -> Failure | None:
    """Every element of ``out`` within ``absolute`` plus ``share`` of its row's magnitude."""
    values = out.float()
    nonfinite = int((~torch.isfinite(values)).sum())
    if nonfinite:
        reason = f"{nonfinite} of {values.numel()} output elements are NaN or Inf"
        return Failure(Code.NAN_INF, reason)
    base = baseline.float()
    allowed = base.abs().amax(dim=-1, keepdim=True).mul_(share).add_(absolute)
    excess = (values - base).abs_().sub_(allowed)
    worst = float(excess.max())
    if worst <= 0:
        return None
    where = tuple(int(i) for i in torch.unravel_index(excess.argmax(), excess.shape))
    diff = float((values[where] - base[where]).abs())
    reason = (
        f"abs difference {diff:.3g} from {target.accuracy.baseline}'s output at {where} "
        f"exceeds what a correct output can differ by there ({diff - worst:.3g}: "
        f"{absolute:.3g} + {share:g} of the row's magnitude)"
    )
    return Failure(Code.INACCURATE, reason)
