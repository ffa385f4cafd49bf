import math

import pytest
import torch
import torch.nn.functional as F

from evals.harness import Code
from evals.harness.targets.attention import attended_pairs, reference_attention
from evals.harness.targets.base import AccuracyRule, OutputSpec
from evals.harness.verification.verify import check_meta, check_values, unwritten_elements

RULE = AccuracyRule(baseline="sdpa", floors={"float32": 1e-5, "bfloat16": 2e-3})


def _qkv(b=2, sq=16, sk=16, hq=4, hkv=2, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, sq, hq, d, generator=g), torch.randn(b, sk, hkv, d, generator=g),
            torch.randn(b, sk, hkv, d, generator=g))


@pytest.mark.parametrize("causal", [False, True])
def test_reference_matches_sdpa_with_gqa(causal):
    q, k, v = _qkv()
    ref = reference_attention(q, k, v, causal=causal, softmax_scale=0.3)
    sdpa = F.scaled_dot_product_attention(
        q.double().transpose(1, 2), k.double().transpose(1, 2), v.double().transpose(1, 2),
        is_causal=causal, scale=0.3, enable_gqa=True).transpose(1, 2)
    assert ref.dtype == torch.float64
    assert torch.allclose(ref, sdpa, atol=1e-12)


def test_reference_causal_is_bottom_right_aligned():
    q, k, v = _qkv(sq=3, sk=5, hq=1, hkv=1)
    ref = reference_attention(q, k, v, causal=True, softmax_scale=1.0)
    # the last query sees every key, i.e. it equals non-causal attention for that row
    full = reference_attention(q, k, v, causal=False, softmax_scale=1.0)
    assert torch.allclose(ref[:, -1], full[:, -1])
    # the first query sees keys 0..2: changing key 3 does not change it
    k2 = k.clone()
    k2[:, 3] += 5
    moved = reference_attention(q, k2, v, causal=True, softmax_scale=1.0)
    assert torch.allclose(moved[:, 0], ref[:, 0])
    assert attended_pairs(3, 5, True) == 3 + 4 + 5
    assert attended_pairs(4, 4, False) == 16


def test_check_meta_reasons():
    spec = OutputSpec(shape=(1, 2, 3, 4), dtype=torch.bfloat16, device="cpu")
    assert check_meta(torch.zeros(1, 2, 3, 4, dtype=torch.bfloat16), spec) is None
    assert check_meta(torch.zeros(1, 2, 3, 2, dtype=torch.bfloat16), spec).code == Code.WRONG_SHAPE
    assert check_meta(torch.zeros(1, 2, 3, 4), spec).code == Code.WRONG_DTYPE


def test_accuracy_rule_is_twice_the_baseline_error_plus_floor():
    ref = torch.zeros(10, dtype=torch.float64)
    baseline = torch.full((10,), 0.01)
    assert RULE.tolerance("float32", 0.01) == pytest.approx(0.02 + 1e-5)
    ok = check_values(torch.full((10,), 0.02), reference=ref, baseline=baseline, rule=RULE,
                      dtype="float32")
    assert ok.failure is None and ok.max_abs_error == pytest.approx(0.02)
    bad = check_values(torch.full((10,), 0.021), reference=ref, baseline=baseline, rule=RULE,
                       dtype="float32")
    assert bad.failure.code == Code.INACCURATE
    assert "exceeds tolerance" in bad.failure.reason


def test_nan_and_inf_are_rejected():
    ref = torch.zeros(4, dtype=torch.float64)
    out = torch.tensor([0.0, math.nan, math.inf, 0.0])
    check = check_values(out, reference=ref, baseline=torch.zeros(4), rule=RULE, dtype="float32")
    assert check.failure.code == Code.NAN_INF and check.nonfinite == 2


@pytest.mark.parametrize("baseline", [None, torch.tensor([1.0, math.nan, 3.0, 4.0])])
def test_a_baseline_that_cannot_compute_the_inputs_leaves_the_rounded_reference(baseline):
    # FA3 overflows on large negative scales: a NaN baseline would make the tolerance NaN and
    # let any output through; the reference rounded to the output dtype stands in
    ref = torch.tensor([1.0, 2.0 + 2**-9, 3.0, 1e30], dtype=torch.float64)
    rounded_error = float((ref.to(torch.bfloat16).double() - ref).abs().max())
    good = ref.to(torch.bfloat16)
    check = check_values(good, reference=ref, baseline=baseline, rule=RULE_BF16,
                         dtype="bfloat16")
    assert check.failure is None and check.baseline_error == pytest.approx(rounded_error)
    bad = check_values(torch.tensor([1.0, 2.0, 3.0, 0.0]), reference=ref, baseline=baseline,
                       rule=RULE_BF16, dtype="bfloat16")
    assert bad.failure is not None and bad.failure.code == Code.INACCURATE


RULE_BF16 = AccuracyRule(baseline="up", floors={"bfloat16": 2e-3})


def test_aggregates_keep_the_headline_over_study_scenarios_and_contract_ones_apart():
    from evals.harness.measurement.timing import summarize
    from evals.harness.scenarios import Scenario
    from evals.harness.verdict.record import ScenarioResult, aggregates

    def result(sid, speedup, *, contract=False, drawn=False, correct=True):
        r = ScenarioResult(Scenario(sid, {}, contract=contract, drawn=drawn), correct=correct)
        stats = [summarize([t] * 5) for t in (100.0, 100.0 * speedup)]
        r.times = {"candidate": stats[0], "up": stats[1]}
        return r

    results = [result("a", 2.0), result("b", 8.0), result("c", 100.0, contract=True),
               result("d", 0.01, contract=True, drawn=True)]
    agg = aggregates(results, ["up"])
    assert agg["geomean_speedup"]["up"] == pytest.approx(4.0)  # the study scenarios only
    assert agg["study_scenarios"] == 2 and agg["all_correct"]
    assert agg["contract"]["scenarios"] == 2 and agg["contract"]["drawn"] == 1
    assert agg["contract"]["geomean_speedup"]["up"] == pytest.approx(1.0)
    results[3].correct = False  # a contract scenario gates correctness
    assert not aggregates(results, ["up"])["all_correct"]


def test_the_scores_speed_figures_leave_the_contract_scenarios_out():
    # evals/bench/scoring/scorer.py reads its headline from upstream_summary: study scenarios only
    from evals.bench.scoring.summary import category_geomeans, upstream_summary
    from evals.harness.measurement.timing import summarize
    from evals.harness.scenarios import Scenario
    from evals.harness.verdict.record import ScenarioResult, Verdict

    def result(sid, speedup, params=None, *, contract=False, drawn=False, unsupported=None):
        r = ScenarioResult(Scenario(sid, params or {}, contract=contract, drawn=drawn),
                           correct=True, unsupported=unsupported or {})
        r.times = {"candidate": summarize([100.0] * 5), "up": summarize([100.0 * speedup] * 5)}
        return r

    verdict = Verdict("score", "cpu_attention", "smoke", {}, None, "ok", upstreams={"up": "1"},
                      results=[
        result("a", 2.0),
        result("b", 8.0),
        result("drawn0-x", 1000.0, contract=True, drawn=True),
        result("c", 0.001, {"category": "contract"}, contract=True, unsupported={"up": "no"}),
    ])
    summary = upstream_summary(verdict)
    assert summary["up"]["geomean"] == pytest.approx(4.0) and summary["up"]["scenarios"] == 2
    assert summary["up"]["coverage"] == 1.0
    assert set(category_geomeans(verdict, "up")) == {"a", "b", "contract"}


def test_the_floor_is_in_units_of_the_values_scale():
    # an honest float32 kernel with a polynomial exp is 4x SDPA's relative error: under the
    # floor at unit values, and it must stay so when v has a standard deviation of 1e9
    ref = torch.full((4,), 1e9, dtype=torch.float64)
    out = ref + 200.0
    assert RULE.tolerance("float32", 40.0, 1e9) == pytest.approx(80.0 + 1e4)
    check = check_values(out.float(), reference=ref, baseline=ref + 40.0, rule=RULE,
                         dtype="float32", value_scale=1e9)
    assert check.failure is None
    strict = check_values(out.float(), reference=ref, baseline=ref + 40.0, rule=RULE,
                          dtype="float32")
    assert strict.failure is not None


def _half_unwritten(fill: float) -> torch.Tensor:
    out = torch.full((4, 64), fill)
    out[:2] = 1.0  # the half a kernel like tests/data/cpu_attention/unwritten.cpp writes
    return out


def test_unwritten_elements_are_told_apart_from_computed_nans():
    poisoned = _half_unwritten(float("nan"))
    assert unwritten_elements(poisoned, _half_unwritten(-391.5)) == 128
    # a recycled small block can hand back old bytes that read as NaN under the finite fill:
    # still unwritten (a rerun that had to be wholly finite called this nan_inf, seen once in CI)
    garbage = _half_unwritten(-391.5)
    garbage[3, 5] = float("nan")
    garbage[2, 0] = float("inf")
    assert unwritten_elements(poisoned, garbage) == 126
    # NaNs the kernel computes come back where they were: nothing was left unwritten
    computed = torch.ones(4, 64)
    computed[1, 7] = float("nan")
    assert unwritten_elements(computed, computed.clone()) == 0
    # NaNs where the first output was finite: not deterministic, not called unwritten
    moved = _half_unwritten(-391.5)
    moved[0, 0] = float("nan")
    assert unwritten_elements(poisoned, moved) == 0
