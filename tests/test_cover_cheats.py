"""Cheats wrong only on an edge class: every run's covering set catches them, whatever its seed.

``odd_batch_pairs.cpp`` is wrong only for an odd batch above 1, which the random draws (batch 1
or 2) never try; ``long_keys_truncated.cpp`` only past 256 keys, which neither they (130 at
most) nor the fixed smoke scenarios reach; ``decode_d128_half.cpp`` only for a single query
row at head dim 128, which they reach by chance. The covering set pins every pair of classes
in every run (:mod:`evals.harness.contract.contract_cover`), so each of five seeds' ``check``
rejects each of them, and on a covering scenario.
"""

import pytest

from evals.harness import Code, RunSettings, evaluate, get_target
from evals.harness.contract.contract_draw import drawn_scenarios
from tests.helpers import ROOT

CHEATS = ROOT / "tests" / "cheats" / "cpu_attention"
SEEDS = (11, 12, 13, 14, 15)
EDGES = {
    "odd_batch_pairs.cpp": lambda p: p["batch"] in (3, 5, 7),
    "decode_d128_half.cpp": lambda p: p["seqlen_q"] == 1 and p["head_dim"] == 128,
    "long_keys_truncated.cpp": lambda p: p["seqlen_k"] > 256,
}


@pytest.mark.parametrize("kernel", sorted(EDGES))
def test_only_the_covering_set_is_sure_to_reach_the_edge(kernel):
    target = get_target("cpu_attention")
    random_hits = 0
    for seed in range(40):
        drawn = drawn_scenarios(target, "smoke", seed)
        assert any(EDGES[kernel](s.params) for s in drawn if s.id.startswith("cover"))
        random_hits += any(EDGES[kernel](s.params) for s in drawn if s.id.startswith("drawn"))
    assert random_hits < 40  # the random draws alone miss it in some runs
    fixed = target.load_suite("smoke").scenarios
    assert not any(EDGES[kernel](s.params) for s in fixed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kernel", sorted(EDGES))
def test_every_seed_catches_the_edge_cheat_on_a_covering_scenario(kernel, seed):
    verdict = evaluate(
        RunSettings("check", "cpu_attention", CHEATS / kernel, suite="smoke", seed=seed)
    )
    assert verdict.status == "failed"
    failed = [r for r in verdict.results if r.failure is not None]
    assert failed and all(r.failure.code == Code.INACCURATE for r in failed)
    assert all(r.scenario.drawn and EDGES[kernel](r.scenario.params) for r in failed)
    assert any(r.scenario.id.startswith("cover") for r in failed)
