"""A run that failed for the machine's or the harness's reasons errors; a bad candidate scores 0."""

import pytest
import torch
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, kernel_task
from evals.bench.scoring.faults import ENVIRONMENT, HARNESS, HarnessFault, verdict_fault
from evals.bench.scoring.harness_exec import HarnessRun
from evals.bench.scoring.scorer import score_from_run
from evals.harness.verdict.record import VERDICT_SCHEMA, Verdict
from tests.helpers import ROOT


def _verdict(status, failure=None, scenario_failures=(None,)):
    scenarios = [
        {"id": f"s{i}", "correct": f is None, "failure": f, "params": {}, "speedup": {}}
        for i, f in enumerate(scenario_failures)
    ]
    passed = sum(1 for s in scenarios if s["correct"])
    return Verdict.from_json({
        "schema": VERDICT_SCHEMA,
        "command": "score",
        "target": "cpu_attention",
        "suite": "smoke",
        "status": status,
        "failure": failure,
        "scenarios": scenarios,
        "aggregates": {
            "scenarios": len(scenarios),
            "passed": passed,
            "all_correct": bool(scenarios) and passed == len(scenarios),
            "geomean_speedup": {},
        },
    })


def _fail(code, reason="why"):
    return {"code": code, "reason": reason}


@pytest.mark.parametrize(
    ("verdict", "prefix"),
    [
        (_verdict("error", _fail("environment", "no CUDA GPU: ...")), ENVIRONMENT),
        (_verdict("error", _fail("device_busy")), ENVIRONMENT),
        (_verdict("error", _fail("harness_error", "the build environment failed")), HARNESS),
        (_verdict("error", _fail("unknown_suite")), HARNESS),
        # the reference failed on one scenario: the harness's side, not the kernel's
        (_verdict("failed", None, [_fail("harness_error", "reference failed"), None]), HARNESS),
    ],
)
def test_faults_not_the_candidates_raise_with_their_prefix(verdict, prefix):
    fault = verdict_fault(verdict)
    assert fault is not None and fault.startswith(prefix)
    run = HarnessRun(2, "", verdict, None, "0" * 64, fault)
    with pytest.raises(HarnessFault, match=f"^{prefix}"):
        score_from_run(run, "sdpa")


@pytest.mark.parametrize(
    "verdict",
    [
        _verdict("failed", _fail("build_error", "x.cpp:1: error"), [_fail("build_error")]),
        _verdict("failed", None, [_fail("inaccurate", "exceeds tolerance"), None]),
        _verdict("failed", None, [_fail("crash", "SIGSEGV")]),
        _verdict("error", _fail("bad_argument", "the kernel is a directory"), []),
    ],
)
def test_the_candidates_own_failures_score_zero_with_the_reason(verdict):
    assert verdict_fault(verdict) is None
    score = score_from_run(HarnessRun(1, "", verdict, None, "0" * 64, None), "sdpa")
    assert score.value["success"] == 0


def test_a_run_without_a_verdict_for_the_harness_raises_and_a_lost_kernel_scores_zero():
    lost = HarnessRun(-1, "", None, "cannot read the kernel kernel.cpp: FileNotFoundError")
    assert score_from_run(lost, "sdpa").value["success"] == 0
    crashed = HarnessRun(
        1,
        "",
        None,
        "the harness wrote no verdict",
        "0" * 64,
        f"{HARNESS} the harness wrote no verdict (exit status 1)",
    )
    with pytest.raises(HarnessFault, match=r"^harness_error: the harness wrote no verdict"):
        score_from_run(crashed, "sdpa")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
@pytest.mark.parametrize(("target", "upstream"), [("fa3_hopper", "fa3"), ("fa4_blackwell", "fa4")])
def test_a_gpu_task_on_a_machine_without_one_errors_the_sample(tmp_path, target, upstream):
    # before: exit 0, success 0.000, booked against the arm; now the sample errors with the
    # reason (an eval set retries it) and no score is recorded
    submit = ModelOutput.for_tool_call(model="mockllm/model", tool_name="submit", tool_arguments={})
    submit.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    settings = TaskSettings(
        target=target, suite="smoke", score_suite="smoke", upstream=upstream, sandbox="local"
    )
    task = kernel_task(settings, version=1, root=ROOT)
    model = get_model("mockllm/model", custom_outputs=[submit])
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "error"
    [sample] = log.samples
    assert sample.error is not None and not sample.scores
    assert "environment: [environment] no CUDA GPU" in sample.error.message


def test_a_dry_runs_score_says_so_first():
    note = "dry run on sm_90, not a Blackwell measurement"
    verdict = _verdict("failed", None, [_fail("inaccurate", "exceeds tolerance")])
    verdict.provenance = {"device": {"arch": "sm_90a", "note": note}}
    score = score_from_run(HarnessRun(1, "", verdict, None, "0" * 64, None), "fa4")
    assert score.explanation.startswith(f"[{note}] 0/1 scenarios correct")
    verdict.provenance = {"device": {"arch": "sm_100a"}}
    score = score_from_run(HarnessRun(1, "", verdict, None, "0" * 64, None), "fa4")
    assert score.explanation.startswith("0/1 scenarios correct")
