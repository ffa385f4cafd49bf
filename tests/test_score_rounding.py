"""The float32 rounding term of cpu_attention's accuracy floor: small on unit-size scores,
grown with them on drawn ones and with long sums over the keys, capped far below the outputs'
size."""

import math

from evals.harness import get_target
from evals.harness.scenarios import Scenario

BASE = {"batch": 1, "seqlen_q": 68, "seqlen_k": 68, "heads_q": 3, "heads_kv": 3,
        "head_dim": 128, "causal": True, "dtype": "float32"}


def _term(**params):
    target = get_target("cpu_attention")
    scenario = Scenario(id="s", params={**BASE, **params})
    return target.score_rounding(scenario) / target.value_scale(scenario)


def test_unit_scores_add_little_to_the_float32_floor():
    assert _term() < 0.3e-5  # scale 1/sqrt(d), qk_std 1: under a third of the 1e-5 floor


def test_drawn_scores_of_tens_add_several_floors():
    # the draw that start.cpp failed by 3.2x: qk_std 0.00142, scale -988647, v_std 6e22
    term = _term(qk_std=0.0014188775, scale=-988647.79, v_std=6.12e22)
    assert term > 3.2 * 1e-5 and term < 1e-4


def test_huge_scores_are_capped_far_below_the_values():
    assert _term(qk_std=2.0**40, scale=1.0) == _term(qk_std=10.0, scale=1.0) < 4e-4
    assert math.isfinite(_term(qk_std=2.0**40, scale=-1e8))


def test_long_sums_over_the_keys_widen_the_floor_past_128_keys():
    # start.cpp, summing in order, was off by 1.5e-5 v_std on a covering row of 1069 keys
    assert _term(seqlen_k=128) == _term()
    assert _term(seqlen_k=1069) - _term() > 3 * 1.5e-5
    assert _term(seqlen_k=1069) < 1e-4
