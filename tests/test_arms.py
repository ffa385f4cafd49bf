"""The KERNELSEEK arms end to end on cpu_attention with scripted mockllm outputs.

Every arm's eval runs two epochs (``--epochs 2``) and each epoch's sample must show the arm's
defining behaviour. The scripted model replays its script from the start in every sample, so the
epochs can run side by side (one harness run per core) and still see the same outputs.
"""

from types import SimpleNamespace

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import transcript
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, bench_target, kernel_task
from evals.bench.agent.recipe import load_recipe, stage_ends
from evals.bench.arms import (
    autonomous,
    kernelseek,
    kernelseek_bank,
    kernelseek_model,
    open_ended,
    scripted,
)
from evals.bench.config.seeds import sample_seed
from evals.bench.questioning.decisions import SuspiciousGainDetector
from evals.bench.questioning.director import question_rule_broken
from tests.helpers import CPU_KERNELS, ROOT, START_CPU

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa",
             sandbox="local")
USAGE = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
EPOCHS = 2


def _tool(tool, **args):
    out = ModelOutput.for_tool_call(model="mockllm/model", tool_name=tool, tool_arguments=args)
    out.usage = USAGE
    return out


def _text(text):
    out = ModelOutput.from_content(model="mockllm/model", content=text)
    out.usage = USAGE
    return out


def _cp(path):
    return _tool("bash", command=f"cp {path} kernel.cpp")


def _scripted(outputs):
    """A mockllm model that replays ``outputs`` from the start in each sample (epoch).

    The sample is told apart by its transcript (``inspect_ai.log.transcript()``, one per
    sample), so concurrent epochs each get the whole script in order.
    """
    steps = {}

    def replay(input, tools, tool_choice, config):
        sample = transcript()  # the key keeps it alive, so no later sample reuses its id
        step = steps.get(sample, 0)
        steps[sample] = step + 1
        if step >= len(outputs):
            raise ValueError(f"the script has only {len(outputs)} outputs")
        return outputs[step].model_copy(deep=True)

    return get_model("mockllm/model", custom_outputs=replay)


def _eval(solver, outputs, tmp_path, **settings):
    task = kernel_task(TaskSettings(**{**SMOKE, **settings}), version=1, root=ROOT,
                       solver=solver)
    # Both epochs at once: each harness run takes one core, so the second epoch adds ~half a run.
    [log] = inspect_eval(task, model=_scripted(outputs), epochs=EPOCHS, max_samples=EPOCHS,
                         log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    assert sorted(s.epoch for s in log.samples) == list(range(1, EPOCHS + 1))
    return log


def _questions(sample):
    return [m.metadata["kernelseek"] for m in sample.messages
            if m.role == "user" and m.metadata and "kernelseek" in m.metadata]


def _tool_results(sample, name):
    """What each call of tool ``name`` returned, last lines first-to-last: for failure messages."""
    return "\n---\n".join(str(m.content)[-600:] for m in sample.messages
                           if m.role == "tool" and getattr(m, "function", None) == name)


def _info(sample, key):
    return [e.data[key] for e in sample.events
            if e.event == "info" and isinstance(e.data, dict) and key in e.data]


@pytest.mark.long
def test_bank_arm_asks_at_a_limit_claim_a_suspicious_gain_and_a_stall(tmp_path):
    outputs = [
        _tool("bench"),                                            # start kernel: first best
        _text("I believe we are at the hardware limit of this CPU."),  # limit claim
        _cp(CPU_KERNELS / "fast.cpp"), _tool("bench"),             # ~8x jump: suspicious (1.2x
                                                                   # is plenty, even under load)
        _cp(START_CPU), _tool("bench"),                            # worse than best: stall
        _tool("submit"),
    ]
    log = _eval(kernelseek_bank(stall_bench_calls=1, gain_factor=1.2), outputs, tmp_path)
    for sample in log.samples:
        asked = _questions(sample)
        assert [q["trigger"] for q in asked] == ["limit_claim", "suspicious_gain", "stall"]
        assert {q["source"] for q in asked} == {"bank"}
        assert len({q["bank_id"] for q in asked}) == 3  # never repeated
        assert asked[0]["state"]["claim"] and "hardware limit" in asked[0]["state"]["claim"]
        points = [p["trigger"] for p in _info(sample, "decision_point")]
        assert points == ["limit_claim", "suspicious_gain", "stall"]


@pytest.mark.long
def test_model_arm_uses_the_questioner_and_replaces_a_rule_breaking_question(tmp_path):
    good = "Is the time going into loading K and V or into the exponentials? Time each part."
    questioner = _scripted([_text(good), _text("Use blocking to fix it.")])
    outputs = [
        _text("This is already optimal."),                         # limit claim -> model asks
        _cp(CPU_KERNELS / "wrong.cpp"), _tool("submit"),           # failed claim -> rejected
        _cp(START_CPU), _tool("submit"),
    ]
    log = _eval(kernelseek_model(questioner=questioner), outputs, tmp_path)
    for sample in log.samples:
        asked = _questions(sample)
        assert [(q["trigger"], q["source"]) for q in asked] == [("limit_claim", "model"),
                                                                ("failed_claim", "bank")]
        assert "no question mark" in asked[1]["note"]
        assert good in [m.text for m in sample.messages if m.role == "user"]


@pytest.mark.parametrize(("text", "reason"), [
    ("Where does the time go? Measure it.", None),
    ("Tile the loop.", "no question mark"),
    ("Is `for (int i...)` slow?", "contains code"),
    ("Why not? You should use shared memory.", "states a fix"),
])
def test_question_rules(text, reason):
    assert question_rule_broken(text) == reason


@pytest.mark.long
def test_scripted_arm_advances_through_its_stages(tmp_path):
    outputs = [
        _tool("bench"),                                    # measure: first best -> next stage
        _cp(CPU_KERNELS / "fast.cpp"), _tool("bench"),     # blocking: new best -> next stage
        _tool("submit"),
    ]
    log = _eval(scripted(), outputs, tmp_path)
    for sample in log.samples:
        stages = _info(sample, "recipe_stage")
        # stages advance on bench verdicts: a failure says what each bench reported
        assert [(s["stage"], s["reason"]) for s in stages] == [
            ("measure", "start"), ("cache_blocking", "new_best"), ("vectorise", "new_best")
        ], _tool_results(sample, "bench")
        prompts = [q["stage"] for q in _questions(sample)]
        assert prompts == ["measure", "cache_blocking", "vectorise"]
    for target in ("cpu_attention", "fa3_hopper"):
        assert load_recipe(bench_target(target).recipe()).target == target


@pytest.mark.long
def test_open_ended_arm_grows_an_archive_and_keeps_the_best(tmp_path):
    fast = (CPU_KERNELS / "fast.cpp").read_text()
    wrong = (CPU_KERNELS / "wrong.cpp").read_text()
    outputs = [_text(f"Here:\n```cpp\n{fast}```"), _text(f"```cpp\n{wrong}```"),
               _text("I would rather not.")]
    # 3 steps of 2 messages; a reply without code spends messages, not an evaluation
    log = _eval(open_ended(), outputs, tmp_path, message_limit=6)
    seeds = {}
    for sample in log.samples:
        steps = _info(sample, "archive")
        assert [s["kept"] for s in steps] == [True, False, False]
        assert [s["size"] for s in steps] == [2, 2, 2]
        assert {s["best"] for s in steps} == {"k1"}  # the faster kernel stays the best
        score = sample.scores["kernel_speedup"]
        assert score.value["success"] == 1 and score.value["speedup"] > 0.15, score.explanation
        [resolved] = _info(sample, "solver_settings")
        seeds[sample.epoch] = resolved["seed"]
    # each epoch draws from its own seed: the sample id and the epoch
    assert seeds == {e: sample_seed(SimpleNamespace(sample_id="cpu_attention", epoch=e,
                                                 metadata={}))
                     for e in range(1, EPOCHS + 1)}
    assert len(set(seeds.values())) == EPOCHS


@pytest.mark.long
def test_autonomous_arm_uses_profile_and_lessons(tmp_path):
    outputs = [
        _tool("lessons_read"),
        _tool("profile"),
        _tool("lessons_append", lesson="The naive kernel spends most time in the d=128 rows."),
        _tool("lessons_read"),
        _tool("bash", command="ls docs"),
        _tool("submit"),
    ]
    log = _eval(autonomous(), outputs, tmp_path)
    for sample in log.samples:
        tool_out = {}
        for m in sample.messages:
            if m.role == "tool":
                tool_out.setdefault(m.function, []).append(m.text)
        assert "(no lessons yet)" in tool_out["lessons_read"][0]  # each epoch starts afresh
        assert "GFLOP/s" in tool_out["profile"][0] or "TFLOP/s" in tool_out["profile"][0]
        assert "d=128 rows" in tool_out["lessons_read"][1]
        assert "reference_attention.py" in tool_out["bash"][0]


@pytest.mark.long
def test_human_arm_continues_cleanly_when_no_one_is_attached(tmp_path):
    outputs = [_text("We are near the theoretical peak."), _tool("submit")]
    log = _eval(kernelseek(wait_s=2), outputs, tmp_path)
    for sample in log.samples:
        notes = _info(sample, "human_questioner")
        assert notes and "without --acp-server" in notes[0] and notes[0].endswith("continuing")
        assert [p["trigger"] for p in _info(sample, "decision_point")] == ["limit_claim"]
        assert not _questions(sample)
        assert sample.scores["kernel_speedup"].value["success"] == 1


def test_sample_seed_differs_by_epoch_and_repeats_across_processes():
    import subprocess
    import sys

    code = ("from types import SimpleNamespace as S; "
            "from evals.bench.config.seeds import sample_seed; "
            "print(sample_seed(S(sample_id='cpu_attention', epoch=1, metadata={})), "
            "sample_seed(S(sample_id='cpu_attention', epoch=2, metadata={})))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    first, second = runs[0].split()
    assert runs[0] == runs[1] and first != second


def test_recipe_stages_fit_the_message_budget_and_the_last_is_reachable():
    for target, limit in (("cpu_attention", 200), ("fa3_hopper", 400), ("cpu_attention", 24)):
        ends = stage_ends(load_recipe(bench_target(target).recipe()), limit)
        assert ends == sorted(ends) and ends[-1] <= limit
        assert ends[-2] < limit  # the last stage starts before the budget is spent


def test_a_harness_flag_counts_only_on_a_gain_of_the_agents_own():
    # A busy machine slows the upstream timed beside the candidate, so the harness flags
    # "suspicious: 1.6x over sdpa" on any kernel; only a new best over an earlier one is a gain.
    flag = ["suspicious: 1.60x over sdpa; worth a look"]
    gain = SuspiciousGainDetector(factor=1.5)
    assert gain.on_bench(0.9, flag) is None          # the start kernel: sets the best
    assert gain.on_bench(0.8, flag) is None          # slower than the best: no gain
    assert gain.on_bench(None, flag) is None         # not all correct: no gain
    point = gain.on_bench(1.0, flag)                 # a small gain the harness finds too good
    assert point is not None and point.evidence["harness_flags"] == flag
    jump = gain.on_bench(2.0, [])                    # a jump over the best, without a flag
    assert jump is not None and jump.evidence["previous_best"] == 1.0
