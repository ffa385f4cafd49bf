"""The integrity checks' accuracy test: a float64 block of heads, all against the baseline."""

from __future__ import annotations

import pytest
import torch

from evals.harness import get_target
from evals.harness.failures import Code
from evals.harness.scenarios import Scenario
from evals.harness.targets.attention import cut_heads
from evals.harness.verification import sampled_check
from evals.harness.verification.sampled_check import check_sampled

PARAMS = {
    "batch": 2,
    "seqlen_q": 48,
    "seqlen_k": 80,
    "heads_q": 24,
    "heads_kv": 8,
    "head_dim": 32,
    "causal": True,
    "dtype": "bfloat16",
}


@pytest.fixture
def case(monkeypatch):
    """A GQA scenario (8 KV heads, groups of 3) sampled whatever its size, and a right output."""
    monkeypatch.setattr(sampled_check, "SAMPLE_FROM_FLOPS", 0.0)
    target = get_target("cpu_attention")
    scenario = Scenario(id="gqa", params=PARAMS)
    inputs = target.make_inputs(scenario, 3)
    right = target.reference(scenario, inputs).to(torch.bfloat16)
    return target, scenario, inputs, right


def _heads_of_reference(target, monkeypatch) -> list[int]:
    seen: list[int] = []
    real = type(target).reference

    def spy(self, scenario, inputs):
        seen.append(inputs["q"].shape[2])
        return real(self, scenario, inputs)

    monkeypatch.setattr(type(target), "reference", spy)
    return seen


def test_a_right_output_passes_with_a_reference_of_one_block(case, monkeypatch):
    target, scenario, inputs, right = case
    seen = _heads_of_reference(target, monkeypatch)
    for seed in range(6):
        assert check_sampled(target, scenario, [right, right.clone()], inputs, seed=seed) == [
            None,
            None,
        ]
    assert seen == [3] * 6  # one KV head (of 8) and its 3 query heads, once per call


@pytest.mark.parametrize("head", [0, 7, 13, 23])
def test_one_wrong_head_fails_inside_the_block_or_out(case, head):
    target, scenario, inputs, right = case
    wrong = right.clone()
    wrong[:, :, head] = wrong[:, :, head].flip(1)  # another row's output: a stale result
    codes = set()
    for seed in range(12):
        (failure,) = check_sampled(target, scenario, [wrong], inputs, seed=seed)
        assert failure is not None and failure.code == Code.INACCURATE
        codes.add(f"from {target.accuracy.baseline}'s output" in failure.reason)
    assert codes == {True, False}  # caught by the block's reference and by the baseline


def test_non_finite_outside_the_block_fails(case):
    target, scenario, inputs, right = case
    bad = right.clone()
    bad[1, 5, 22, 3] = float("nan")
    failures = [check_sampled(target, scenario, [bad], inputs, seed=s)[0] for s in range(8)]
    assert all(f is not None and f.code == Code.NAN_INF for f in failures)


def test_small_scenarios_are_checked_whole(case, monkeypatch):
    target, scenario, inputs, right = case
    monkeypatch.setattr(sampled_check, "SAMPLE_FROM_FLOPS", 1e30)
    seen = _heads_of_reference(target, monkeypatch)
    assert check_sampled(target, scenario, [right], inputs, seed=1) == [None]
    assert seen == [24]


def test_a_baseline_that_fails_leaves_the_rounded_reference_to_judge_whole(case, monkeypatch):
    target, scenario, inputs, right = case
    upstream = target.upstream(target.accuracy.baseline)
    monkeypatch.setattr(type(upstream), "prepare", lambda self, i: lambda: right * float("nan"))
    seen = _heads_of_reference(target, monkeypatch)
    assert check_sampled(target, scenario, [right], inputs, seed=1) == [None]
    assert seen[-1] == 24


def test_cut_heads_keeps_each_query_head_with_its_kv_head(case):
    _, _, inputs, _ = case
    cut = cut_heads({**inputs, "k_descale": torch.arange(16.0).view(2, 8)}, slice(2, 4), 3)
    assert torch.equal(cut["q"], inputs["q"][:, :, 6:12])
    assert torch.equal(cut["k"], inputs["k"][:, :, 2:4])
    assert cut["k_descale"].tolist() == [[2.0, 3.0], [10.0, 11.0]]
    assert cut["causal"] is inputs["causal"]


def test_heads_of_another_scale_outside_the_block_pass_when_right(case):
    # fp8 descales and the probe's rewritten keys give heads and rows of other magnitudes; the
    # baseline's error scales with them, so a right output must pass whatever block is drawn
    target, scenario, inputs, _ = case
    target.rewrite_kv_part(scenario, inputs, 11)
    inputs["v"][:, :, 5] *= 64
    right = target.reference(scenario, inputs).to(torch.bfloat16)
    for seed in range(16):
        assert check_sampled(target, scenario, [right], inputs, seed=seed) == [None], seed
    stale = right.clone()
    stale[:, :, 15:18] = stale[:, :, 15:18].flip(1)  # KV head 5's rows swapped
    failures = [check_sampled(target, scenario, [stale], inputs, seed=s)[0] for s in range(16)]
    assert all(f is not None and f.code == Code.INACCURATE for f in failures)
