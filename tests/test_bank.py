"""The question bank: the real bank's shape, the schema's rules, and question selection."""

import json
import random
from collections import Counter
from pathlib import Path

import pytest
import yaml

from evals.bank import (
    DEFAULT_BANK_PATH,
    TAGS,
    TRIGGERS,
    Bank,
    BankError,
    Question,
    choose_question,
    focus_from_scenarios,
    load_bank,
)

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "evals" / "targets"
KEYS = ["id", "triggers", "text", "hypothesis", "measurement", "tags", "origin"]


def _question(**overrides):
    q = {
        "id": "q-one",
        "triggers": ["stall"],
        "text": "Where does the time of the slowest scenario go?",
        "hypothesis": "The slowest scenario is bound by something not yet measured.",
        "measurement": "Profile it and compare compute and memory throughput with peak.",
        "tags": ["general"],
        "origin": "test",
    }
    q.update(overrides)
    return q


def _write(tmp_path, questions):
    path = tmp_path / "questions.yaml"
    path.write_text(yaml.safe_dump({"questions": questions}, sort_keys=False))
    return path


def _bank(*questions):
    return Bank(questions=[Question(**q) for q in questions])


# ------------------------------------------------------------------ the real bank


def test_real_bank_loads_from_the_default_path():
    # the packaged bank is the repository's bank/ (evals/data/bank links to it)
    assert Path(str(DEFAULT_BANK_PATH)).resolve() == (ROOT / "bank" / "questions.yaml").resolve()
    bank = load_bank()
    assert len(bank.questions) >= 30
    ids = [q.id for q in bank.questions]
    assert len(ids) == len(set(ids))
    for trigger in TRIGGERS:
        assert len(bank.for_trigger(trigger)) >= 6, trigger


def test_real_bank_entries_have_exactly_the_schema_keys():
    raw = yaml.safe_load(DEFAULT_BANK_PATH.read_text())
    assert list(raw) == ["questions"]
    for entry in raw["questions"]:
        assert list(entry) == KEYS, entry.get("id")


def test_real_bank_covers_the_topics():
    bank = load_bank()
    tags = Counter(t for q in bank.questions for t in q.tags)
    for tag in ("decode", "fp8", "host-side", "prefill", "correctness", "measurement", "cpu"):
        assert tags[tag] >= 3, tag
    assert set(tags) <= set(TAGS)
    gains = bank.for_trigger("suspicious_gain")
    assert sum("measurement" in q.tags or "correctness" in q.tags for q in gains) >= 6


def test_real_bank_questions_are_single_prose_questions():
    for q in load_bank().questions:
        assert q.text.endswith("?") and q.text.count("?") == 1, q.id
        assert "\n" not in q.text + q.hypothesis + q.measurement, q.id
        assert q.origin


# ------------------------------------------------------------------ schema and loader errors


def test_unknown_key_fails_naming_the_key(tmp_path):
    path = _write(tmp_path, [_question(), _question(id="q-two", colour="red")])
    with pytest.raises(BankError) as err:
        load_bank(path)
    msg = str(err.value)
    assert "colour" in msg and str(path) in msg and "q-two" in msg
    assert "\n" not in msg


def test_missing_key_fails(tmp_path):
    entry = _question()
    del entry["measurement"]
    with pytest.raises(BankError, match="missing key 'measurement'"):
        load_bank(_write(tmp_path, [entry]))


def test_question_without_question_mark_fails(tmp_path):
    path = _write(tmp_path, [_question(text="Profile the slowest scenario.")])
    with pytest.raises(BankError, match=r"end with '\?'"):
        load_bank(path)


@pytest.mark.parametrize(
    "text",
    [
        "Did you try `cudaFuncSetAttribute` here?",
        "Is the loop { unrolled } enough?",
        "What does __global__ void f do here?",
        "Why not #include the pipeline header?",
        "Is this line fine;\nor is it?",
        "What does torch.cuda.synchronize() change?",
        "Is the launch<<<grid>>> too small?",
    ],
)
def test_question_with_code_fails(tmp_path, text):
    with pytest.raises(BankError, match="without code"):
        load_bank(_write(tmp_path, [_question(text=text)]))


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"id": "Not A Slug"}, "slug"),
        ({"tags": ["gpu"]}, "tags"),
        ({"tags": []}, "at least one"),
        ({"triggers": ["bored"]}, "triggers"),
        ({"triggers": []}, "at least one"),
        ({"text": "Is it fast? Is it right?"}, "one question"),
        ({"text": "Is it slow, and the fix is to unroll?"}, "fix"),
        ({"hypothesis": "  "}, "empty"),
    ],
)
def test_invalid_questions_fail(tmp_path, override, problem):
    with pytest.raises(BankError, match=problem):
        load_bank(_write(tmp_path, [_question(**override)]))


def test_duplicate_ids_fail(tmp_path):
    with pytest.raises(BankError, match="duplicate question ids: \\['q-one'\\]"):
        load_bank(_write(tmp_path, [_question(), _question()]))


def test_duplicate_yaml_key_fails(tmp_path):
    path = tmp_path / "questions.yaml"
    path.write_text(
        "questions:\n  - id: a\n    id: b\n    triggers: [stall]\n    text: Why?\n"
        "    hypothesis: h.\n    measurement: m.\n    tags: [general]\n    origin: o\n"
    )
    with pytest.raises(BankError, match="duplicate key 'id'"):
        load_bank(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("questions: [unclosed\n", "invalid YAML"),
        ("", "empty"),
        ("- id: a\n", "got a list"),
        ("questions: []\nformat: 2\n", "unknown key 'format'"),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path, content, problem):
    path = tmp_path / "questions.yaml"
    path.write_text(content)
    with pytest.raises(BankError, match=problem) as err:
        load_bank(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file_fails(tmp_path):
    with pytest.raises(BankError, match="cannot read"):
        load_bank(tmp_path / "nope.yaml")


def test_bank_error_is_a_value_error():
    assert issubclass(BankError, ValueError)


def test_questions_are_frozen():
    q = Question(**_question())
    with pytest.raises(ValueError):
        q.text = "Changed?"  # type: ignore[misc]


def test_for_trigger_rejects_unknown_trigger():
    with pytest.raises(ValueError, match="unknown trigger"):
        load_bank().for_trigger("bored")  # type: ignore[arg-type]


# ------------------------------------------------------------------ selection


def test_choose_question_never_repeats_and_exhausts():
    bank = load_bank()
    for trigger in TRIGGERS:
        rng = random.Random(0)
        asked: list[str] = []
        while (q := choose_question(bank, trigger=trigger, asked=asked, rng=rng)) is not None:
            assert q.id not in asked and trigger in q.triggers
            asked.append(q.id)
        assert sorted(asked) == sorted(q.id for q in bank.for_trigger(trigger))


def test_choose_question_returns_none_when_exhausted():
    bank = _bank(_question(id="a"), _question(id="b"))
    rng = random.Random(1)
    assert choose_question(bank, trigger="stall", asked=["a", "b"], rng=rng) is None
    assert choose_question(bank, trigger="failed_claim", rng=rng) is None
    assert choose_question(bank, trigger="stall", asked=["a"], rng=rng).id == "b"


def test_decode_focus_picks_decode_questions_first():
    bank = load_bank()
    decode = {q.id for q in bank.for_trigger("stall") if "decode" in q.tags}
    assert len(decode) >= 2
    for seed in range(10):
        rng = random.Random(seed)
        asked: list[str] = []
        for _ in range(len(decode)):
            q = choose_question(bank, trigger="stall", focus=["decode"], asked=asked, rng=rng)
            assert q is not None and q.id in decode
            asked.append(q.id)
        # decode questions spent: general ones come next
        q = choose_question(bank, trigger="stall", focus=["decode"], asked=asked, rng=rng)
        assert q is not None and "general" in q.tags


def test_relevance_counts_matching_tags_then_general_then_on_target():
    bank = _bank(
        _question(id="cpu-only", tags=["cpu", "memory"]),
        _question(id="fp8-only", tags=["fp8"]),
        _question(id="decode-fp8", tags=["decode", "fp8"]),
        _question(id="general", tags=["general"]),
        _question(id="decode", tags=["decode"]),
        _question(id="memory", tags=["memory"]),
    )
    order = []
    rng = random.Random(3)
    focus = ["decode", "fp8"]
    while q := choose_question(bank, trigger="stall", focus=focus, asked=order, rng=rng):
        order.append(q.id)
    assert order[0] == "decode-fp8"
    assert set(order[1:3]) == {"fp8-only", "decode"}
    assert order[3] == "general"
    assert order[4] == "memory"
    assert order[5] == "cpu-only"  # written for the other target: last


def test_cpu_focus_puts_gpu_questions_last():
    bank = _bank(
        _question(id="prefill", tags=["prefill", "compute"]),
        _question(id="compute", tags=["compute"]),
        _question(id="cpu", tags=["cpu", "compute"]),
    )
    order = []
    rng = random.Random(0)
    while q := choose_question(bank, trigger="stall", focus=["cpu"], asked=order, rng=rng):
        order.append(q.id)
    assert order == ["cpu", "compute", "prefill"]


def test_choose_question_is_reproducible_and_uses_the_rng():
    bank = load_bank()

    def run(seed):
        rng = random.Random(seed)
        asked: list[str] = []
        while (q := choose_question(bank, trigger="stall", asked=asked, rng=rng)) is not None:
            asked.append(q.id)
        return asked

    assert run(7) == run(7)
    assert len({tuple(run(seed)) for seed in range(5)}) > 1


# ------------------------------------------------------------------ focus from scenarios


@pytest.mark.parametrize(
    ("category", "tags"),
    [
        ("prefill", ["prefill"]),
        ("gqa", ["prefill", "gqa"]),
        ("fp8", ["prefill", "fp8"]),
        ("varlen", ["prefill", "varlen"]),
        ("decode", ["decode"]),
        ("ragged", ["decode"]),
        ("fp8decode", ["decode", "fp8"]),
        ("spec", ["decode"]),
        ("chunk", ["prefill"]),
        ("long", ["prefill"]),
        ("smoke", []),
    ],
)
def test_focus_from_category(category, tags):
    assert focus_from_scenarios([{"id": f"{category}-x", "category": category}]) == tags
    assert focus_from_scenarios([{"id": "x", "params": {"category": category}}]) == tags
    assert focus_from_scenarios([{"id": f"{category}-bf16-d64"}]) == tags


def test_focus_from_cpu_scenarios():
    assert focus_from_scenarios([{"id": "fp32-d64-s128-b4-h8-full"}]) == ["cpu"]
    assert focus_from_scenarios([{"id": "bf16-d128-s256-b2-h8k2-full", "category": None}]) == [
        "cpu"
    ]
    assert focus_from_scenarios([{"id": "smoke-fp32-d64-s128-h4-full"}]) == ["cpu"]
    assert focus_from_scenarios([{"id": "x", "params": {"batch": 4}}]) == ["cpu"]


def test_focus_merges_without_duplicates_in_order():
    worst = [
        {"id": "ragged-a", "category": "ragged"},
        {"id": "fp8decode-b", "category": "fp8decode"},
        {"id": "gqa-c", "category": "gqa"},
        {"id": "decode-d", "category": "decode"},
    ]
    assert focus_from_scenarios(worst) == ["decode", "fp8", "prefill", "gqa"]
    assert focus_from_scenarios([]) == []
    assert focus_from_scenarios([{"id": "mystery-1", "category": "mystery"}, {}]) == []


@pytest.mark.parametrize("target", ["fa3_hopper", "cpu_attention"])
def test_every_suite_scenario_maps(target):
    for suite in (SUITES / target / "suites" / f"{name}.json" for name in ("smoke", "dev", "full")):
        for sc in json.loads(suite.read_text())["scenarios"]:
            tags = focus_from_scenarios([sc])
            if target == "cpu_attention":
                assert tags == ["cpu"], sc["id"]
            elif sc["params"]["category"] != "smoke":
                assert tags and set(tags) <= set(TAGS), sc["id"]
