import json
import math
from pathlib import Path

import pytest

from evals.harness import Code, HarnessInputError, get_target, load_suite, target_names
from evals.harness.attention import AttentionShape


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
