import json
import math
from pathlib import Path

import pytest

from evals.harness import Code, HarnessInputError, get_target, load_suite, target_names
from evals.harness.targets.attention import AttentionShape


def test_registry_lists_cpu_target_and_rejects_unknown():
    assert "cpu_attention" in target_names()
    assert get_target("cpu_attention").device == "cpu"
    with pytest.raises(HarnessInputError) as info:
        get_target("no_such_target")
    assert info.value.failure.code == Code.UNKNOWN_TARGET
    assert "cpu_attention" in info.value.failure.reason


def test_cpu_suites_cover_the_required_grid():
    target = get_target("cpu_attention")
    dev, full = target.load_suite("dev"), target.load_suite("full")
    assert len(dev.scenarios) >= 8
    assert len(full.scenarios) > len(dev.scenarios)
    assert set(dev.ids) <= set(full.ids)
    shapes = [AttentionShape.from_params(s.params) for s in dev.scenarios]
    assert {s.dtype for s in shapes} == {"float32", "bfloat16"}
    assert {s.head_dim for s in shapes} == {64, 128}
    assert {s.causal for s in shapes} == {True, False}
    assert any(s.heads_kv < s.heads_q for s in shapes)
    assert min(s.seqlen_q for s in shapes) == 1 and max(s.seqlen_q for s in shapes) == 1024


@pytest.mark.parametrize("suite", ["smoke", "dev", "full"])
def test_cpu_suites_test_every_contract_clause(suite):
    # kernels wrong only off the common path (top-left causal, a default scale, tile-sized
    # lengths, no max subtraction) must fail every suite, the smoke suite included
    shapes = [AttentionShape.from_params(s.params) for s in
              get_target("cpu_attention").load_suite(suite).scenarios]
    assert any(s.causal and s.seqlen_q < s.seqlen_k for s in shapes)
    assert any(s.seqlen_q == 1 for s in shapes)
    assert any(s.seqlen_q % 2 and s.seqlen_k % 2 and s.seqlen_k > 32 for s in shapes)
    assert any(s.softmax_scale != 1 / math.sqrt(s.head_dim) for s in shapes)
    # scores of 4 standard deviations overflow float32 exp (88.7) without max subtraction
    assert any(4 * s.qk_std**2 * math.sqrt(s.head_dim) * s.softmax_scale > 88.7 for s in shapes)


def test_unknown_suite_is_rejected_with_known_names():
    with pytest.raises(HarnessInputError) as info:
        get_target("cpu_attention").load_suite("huge")
    assert info.value.failure.code == Code.UNKNOWN_SUITE
    assert "dev" in info.value.failure.reason


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(doc))
    return path


def test_suite_loader_validates(tmp_path):
    fmt = "kernelseek.suite/1"
    ok = _write(tmp_path, {"format": fmt, "scenarios": [{"id": "a", "params": {"x": 1}}]})
    suite = load_suite(ok, "t")
    assert suite.ids == ("a",) and suite.scenarios[0].params["x"] == 1
    bad_docs = [
        {"format": "other", "scenarios": [{"id": "a"}]},
        {"format": fmt, "scenarios": [{"id": "a"}, {"id": "a"}]},
        {"format": fmt, "scenarios": [{"params": {}}]},
        {"format": fmt, "scenarios": []},
    ]
    for doc in bad_docs:
        with pytest.raises(HarnessInputError):
            load_suite(_write(tmp_path, doc), "t")
    with pytest.raises(HarnessInputError) as info:
        load_suite(tmp_path / "missing.json", "t")
    assert info.value.failure.code == Code.UNKNOWN_SUITE


def test_attention_shape_rejects_bad_params():
    base = dict(batch=1, seqlen_q=4, seqlen_k=4, heads_q=4, heads_kv=2, head_dim=8, causal=False,
                dtype="float32")
    assert AttentionShape.from_params(base).heads_kv == 2
    for change in ({"heads_kv": 3}, {"dtype": "int8"}, {"extra": 1}):
        with pytest.raises(ValueError):
            AttentionShape.from_params({**base, **change})


def test_cpu_inputs_follow_the_scenario_scale_and_magnitude():
    target = get_target("cpu_attention")
    sc = next(s for s in target.load_suite("smoke").scenarios if "std8" in s.id)
    inputs = target.make_inputs(sc, seed=5)
    assert 7.0 < float(inputs["q"].std()) < 9.0 and 7.0 < float(inputs["k"].std()) < 9.0
    assert 0.8 < float(inputs["v"].std()) < 1.2
    target.refill_query(sc, inputs, seed=6)  # fresh queries keep the scenario's magnitude
    assert 7.0 < float(inputs["q"].std()) < 9.0
    scaled = next(s for s in target.load_suite("smoke").scenarios if "scale0.3" in s.id)
    assert target.make_inputs(scaled, seed=5)["softmax_scale"] == 0.3


# integrity III: contract scenarios drawn from the run's seed, and the contract flag

from evals.harness.contract.contract_draw import drawn_scenarios  # noqa: E402
from evals.harness.verification.kv_rewrite import rewrite_kv_rows  # noqa: E402


def _is_pow2(n):
    return n & (n - 1) == 0


@pytest.mark.parametrize("name", ["cpu_attention", "fa3_hopper"])
def test_drawn_scenarios_are_reproducible_from_the_seed_and_flagged(name):
    target = get_target(name)
    first = drawn_scenarios(target, "dev", 7)
    assert first == drawn_scenarios(target, "dev", 7)  # the same seed, the same scenarios
    assert [s.id for s in first] != [s.id for s in drawn_scenarios(target, "dev", 8)]
    assert sum(s.id.startswith("drawn") for s in first) == 4  # and the covering set
    assert all(s.contract and s.drawn for s in first)
    assert len({s.id for s in first}) == len(first)
    for s in first:  # the verdict's JSON carries the id, the parameters and both flags
        assert s.to_json()["drawn"] is True and s.to_json()["params"] == dict(s.params)


@pytest.mark.parametrize("seed", range(40))
def test_every_smoke_draw_holds_each_class_of_the_contract_the_suites_never_try(seed):
    # three draws: a negative scale, causal rows that see no key, a group that is not a power
    # of two on more than one KV head, bf16 values beyond half precision's range (most seeds)
    for name in ("cpu_attention", "fa3_hopper"):
        target = get_target(name)
        drawn = [dict(s.params) for s in drawn_scenarios(target, "smoke", seed)]
        assert any(p["scale"] < 0 for p in drawn)
        assert any(p["scale"] > 0 for p in drawn)
        assert any(
            p["causal"] and (p.get("seqlens") or [p["seqlen_q"]])[0]
            > (p.get("seqlens_k") or [p.get("seqlen_k") or p.get("cache_len")])[0]
            for p in drawn
        )
        assert any(not _is_pow2(p["heads_q"] // p["heads_kv"]) and p["heads_kv"] > 1
                   for p in drawn)
        assert all(math.isfinite(p["scale"]) and p["scale"] != 0 for p in drawn)


def test_cpu_draws_reach_every_class_over_a_few_seeds():
    target = get_target("cpu_attention")
    drawn = [dict(s.params) for seed in range(20) for s in drawn_scenarios(target, "dev", seed)]
    assert any(p["heads_q"] % 2 for p in drawn)  # odd head counts
    assert any(p["heads_kv"] == 1 and p["heads_q"] > 1 for p in drawn)  # MQA
    assert any(p["dtype"] == "bfloat16" and p["v_std"] > 2**16 for p in drawn)
    assert any(abs(p["scale"]) < 1e-20 for p in drawn) and any(abs(p["scale"]) > 1e3
                                                               for p in drawn)
    assert {p["dtype"] for p in drawn} == {"float32", "bfloat16"}


def test_fa3_draws_reach_every_kind():
    target = get_target("fa3_hopper")
    drawn = [target.params(s) for seed in range(10) for s in drawn_scenarios(target, "full", seed)]
    assert {p.kind for p in drawn} == {"prefill", "varlen", "kvcache"}
    assert {p.head_dim for p in drawn} == {64, 96, 128, 192, 256}
    assert any(p.fp8 and p.descale_spread > 0 for p in drawn)
    assert any(p.kind == "kvcache" and p.append for p in drawn)
    assert any(p.kind == "kvcache" and p.causal and p.seqlen_q > p.cache_len for p in drawn)


@pytest.mark.parametrize(("name", "suite", "contract"),
                         [("cpu_attention", "smoke", 3), ("cpu_attention", "dev", 6),
                          ("cpu_attention", "full", 13), ("fa3_hopper", "smoke", 6),
                          ("fa3_hopper", "dev", 6), ("fa3_hopper", "full", 12)])
def test_suites_flag_their_contract_scenarios(name, suite, contract):
    scenarios = get_target(name).load_suite(suite).scenarios
    flagged = [s for s in scenarios if s.contract]
    assert len(flagged) == contract and not any(s.drawn for s in scenarios)
    if name == "fa3_hopper":  # the study's 26 dev and 182 full configurations are the rest
        assert all(s.params["category"] == "contract" for s in flagged)
        study = len(scenarios) - contract
        assert study == {"smoke": 6, "dev": 26, "full": 182}[suite]


def test_suite_loader_rejects_a_contract_flag_that_is_not_a_boolean(tmp_path):
    doc = {"format": "kernelseek.suite/1", "scenarios": [{"id": "a", "contract": "yes"}]}
    with pytest.raises(HarnessInputError) as info:
        load_suite(_write(tmp_path, doc), "x")
    assert "contract must be true or false" in info.value.failure.reason


@pytest.mark.parametrize("packed", [False, True])
def test_the_partial_rewrite_changes_a_few_rows_of_one_head_within_the_valid_rows(packed):
    import torch

    shape = (40, 3, 8) if packed else (2, 40, 3, 8)
    k, v = torch.zeros(shape), torch.zeros(shape)
    valid = None if packed else [0, 24]
    rewrite_kv_rows(k, v, seed=5, qk_std=1.0, v_std=1.0, valid_rows=valid)
    again_k, again_v = torch.zeros(shape), torch.zeros(shape)
    rewrite_kv_rows(again_k, again_v, seed=5, qk_std=1.0, v_std=1.0, valid_rows=valid)
    assert torch.equal(k, again_k) and torch.equal(v, again_v)  # the parent rebuilds it
    rows = (k != 0).any(-1)  # (rows, heads) or (batch, rows, heads)
    heads = rows.any(-2).nonzero()
    assert len(heads) == 1 and (v != 0).any()
    if not packed:
        assert not rows[0].any() and not rows[1, 24:].any()  # sequence 0 has no valid row
    assert 1 <= int(rows.sum()) <= 5
