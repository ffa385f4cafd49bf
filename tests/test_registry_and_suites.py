import json
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
    assert min(s.seqlen_q for s in shapes) == 128 and max(s.seqlen_q for s in shapes) == 1024


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
