"""Verification of one output against the float64 reference and the accuracy rule."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets.base import AccuracyRule, Inputs, OutputSpec, Target


@dataclass(frozen=True)
class Check:
    """Result of checking one output.

    Attributes:
        max_abs_error: Max abs difference to the float64 reference (nan when not computed).
        mean_abs_error: Mean abs difference to the reference.
        baseline_error: Max abs error of the baseline upstream on the same inputs.
        tolerance: The allowed max abs error.
        nonfinite: Number of NaN or Inf elements in the output.
        failure: Why the output is rejected, or None.

    """

    max_abs_error: float
    mean_abs_error: float
    baseline_error: float
    tolerance: float
    nonfinite: int
    failure: Failure | None


def check_meta(out: torch.Tensor, spec: OutputSpec) -> Failure | None:
    """Shape, dtype and device of ``out`` against ``spec``."""
    if tuple(out.shape) != spec.shape:
        return Failure(Code.WRONG_SHAPE, f"output shape {tuple(out.shape)}, expected {spec.shape}")
    if out.dtype != spec.dtype:
        return Failure(Code.WRONG_DTYPE, f"output dtype {out.dtype}, expected {spec.dtype}")
    if out.device.type != spec.device:
        return Failure(Code.WRONG_DEVICE, f"output on {out.device.type}, expected {spec.device}")
    return None


def check_values(
    out: torch.Tensor,
    *,
    reference: torch.Tensor,
    baseline: torch.Tensor | None,
    rule: AccuracyRule,
    dtype: str,
    value_scale: float = 1.0,
    rounding: float = 0.0,
) -> Check:
    """Apply the accuracy rule: no NaN/Inf, and max error <= factor * baseline error + floor.

    Args:
        out: Candidate output, already checked by :func:`check_meta`.
        reference: Float64 reference, same shape.
        baseline: The baseline upstream's output on the same inputs, same precision; None
            (or an output with NaN or Inf) where it cannot compute them: then the reference
            rounded to the output dtype stands in.
        rule: The target's accuracy rule.
        dtype: Output dtype name (selects the floor).
        value_scale: The standard deviation of v; the floor is in its units.
        rounding: Added to the floor (:meth:`Target.score_rounding`).

    """
    ref = reference.to(torch.float64)
    base = None if baseline is None else baseline.to(torch.float64)
    if base is None or not bool(torch.isfinite(base).all()):
        # the upstream cannot run these inputs, or fails on them (FA3 subtracts the maximum of
        # the unscaled scores, so a large negative scale overflows its exp; FA4's SM90 path
        # returns NaN for every negative scale): the baseline is then the reference rounded to
        # the output dtype, the error of a correct rounding
        base = ref.to(out.dtype).to(torch.float64)
    base_err = float((base - ref).abs().max())
    tol = rule.tolerance(dtype, base_err, value_scale, rounding)
    values = out.to(torch.float64)
    finite = torch.isfinite(values)
    nonfinite = int((~finite).sum())
    if nonfinite:
        n = values.numel()
        bad = Failure(Code.NAN_INF, f"{nonfinite} of {n} output elements are NaN or Inf")
        return Check(float("nan"), float("nan"), base_err, tol, nonfinite, bad)
    diff = (values - ref).abs()
    max_err, mean_err = float(diff.max()), float(diff.mean())
    failure: Failure | None = None
    if max_err > tol:
        where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        failure = Failure(
            Code.INACCURATE,
            f"max abs error {max_err:.3g} at {where} exceeds tolerance {tol:.3g} "
            f"({rule.upstream_factor:g} x {rule.baseline} error {base_err:.3g} "
            f"+ floor {rule.floors[dtype] * value_scale + rounding:.3g})",
        )
    return Check(max_err, mean_err, base_err, tol, 0, failure)


def unwritten_elements(poisoned: torch.Tensor, rerun: torch.Tensor) -> int:
    """Elements non-finite in ``poisoned`` that came back finite in ``rerun``: never written.

    ``poisoned`` is an output made with fresh memory filled with NaN, ``rerun`` the same call
    on the same inputs with fresh memory holding a finite pattern. The rerun need not be wholly
    finite: glibc can hand small blocks back from its per-thread cache unfilled, so an unwritten
    element may read old bytes that happen to be NaN there. A kernel that computes its NaNs
    computes them again where they were, so none turns finite; one whose NaNs appear where the
    first output was finite is not deterministic, and is not called unwritten either (0).
    """
    bad_first, bad_again = ~torch.isfinite(poisoned), ~torch.isfinite(rerun)
    if bool((bad_again & ~bad_first).any()):
        return 0
    return int((bad_first & ~bad_again).sum())


def check_each(
    target: Target, scenario: Scenario, outs: list[torch.Tensor], inputs: Inputs
) -> list[Failure | None]:
    """Apply the accuracy rule to each of ``outs``, all computed from ``inputs``.

    The float64 reference and the baseline are computed once for all of them: the reference
    is most of a check's cost.
    """
    spec = target.expected_output(scenario)
    failures: list[Failure | None] = [check_meta(out, spec) for out in outs]
    if all(f is not None for f in failures):
        return failures
    reference, baseline = expected(target, scenario, inputs)
    for i, out in enumerate(outs):
        if failures[i] is None:
            failures[i] = check_output(target, scenario, out, reference, baseline).failure
    return failures


def check_output(
    target: Target,
    scenario: Scenario,
    out: torch.Tensor,
    reference: torch.Tensor,
    baseline: torch.Tensor | None,
) -> Check:
    """The target's accuracy rule on ``out`` for ``scenario`` (its meta already checked)."""
    return check_values(
        out,
        reference=reference,
        baseline=baseline,
        rule=target.accuracy,
        dtype=str(target.expected_output(scenario).dtype).removeprefix("torch."),
        value_scale=target.value_scale(scenario),
        rounding=target.score_rounding(scenario),
    )


def expected(
    target: Target, scenario: Scenario, inputs: Inputs
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The float64 reference and the accuracy baseline's output, computed in this process.

    On a contract scenario the baseline may be None: an upstream that cannot run an input the
    contract allows does not excuse the candidate (the rounded reference stands in).
    """
    reference = target.reference(scenario, inputs)
    try:
        baseline = target.upstream(target.accuracy.baseline).prepare(inputs)()
    except Exception:
        if not scenario.contract:
            raise
        return reference, None
    return reference, baseline
