"""The final score's channel: planted or stale verdicts are never read, every verdict is checked
(exit status, schema, kernel hash), and the agent's leftover processes are stopped first."""

import hashlib
import json
import os
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, kernel_task
from evals.bench.scoring.relay_io import check_verdict, split_output
from tests.helpers import ROOT, START_CPU

SMOKE = dict(
    target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa", sandbox="local"
)
SHA = hashlib.sha256(START_CPU.read_bytes()).hexdigest()


def _out(tool, **args):
    out = ModelOutput.for_tool_call(model="mockllm/model", tool_name=tool, tool_arguments=args)
    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return out


def _forged(sha=SHA, status="ok"):
    scen = [{"id": "x", "correct": True, "speedup": {"sdpa": 50.0}, "params": {}}]
    return {
        "schema": "kernelseek.verdict/1",
        "command": "score",
        "target": "cpu_attention",
        "suite": "smoke",
        "status": status,
        "kernel": {"path": "kernel.cpp", "sha256": sha},
        "scenarios": scen,
        "seed": 1,
        "aggregates": {
            "scenarios": 1,
            "passed": 1,
            "all_correct": True,
            "geomean_speedup": {"sdpa": 50.0},
        },
    }


@pytest.mark.long  # a real score end to end, about a minute quiet (two beside hogs)
def test_forged_verdict_on_the_workspace_scores_the_real_kernel(tmp_path):
    pidfile = tmp_path / "pid"
    plant = (
        "mkdir -p .kernelseek/score.json.tmp .kernelseek/x && "
        f"echo '{json.dumps(_forged())}' > .kernelseek/score.json && "
        f"cp .kernelseek/score.json .kernelseek/check.json && "
        # a process left running (it could rewrite the kernel while the scorer works)
        f"(nohup sh -c 'echo $$ > {pidfile}; exec sleep 600' >/dev/null 2>&1 &)"
    )
    task = kernel_task(TaskSettings(**SMOKE), version=1, root=ROOT)
    model = get_model("mockllm/model", custom_outputs=[_out("bash", command=plant), _out("submit")])
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    score = log.samples[0].scores["kernel_speedup"]
    # the harness's own verdict of the start kernel (slow, correct), not the planted 50x
    assert score.value["success"] == 1 and 0 < score.value["speedup"] < 5
    assert score.metadata["kernel_sha256"] == SHA
    pid = int(pidfile.read_text())
    assert pid in score.metadata["stopped_processes"]["killed"]
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_verdict_checks_reject_forgeries_with_a_reason():
    good = json.dumps(_forged())
    assert check_verdict(good, returncode=0, command="score", kernel_sha256=SHA)[0] is not None
    cases = [
        (json.dumps(_forged(sha="0" * 64)), 0, "is for kernel 000000000000"),
        (good, 1, "exit status 1 disagrees with verdict status 'ok'"),
        (json.dumps({**_forged(), "schema": "mine/1"}), 0, "schema"),
        (json.dumps({"status": "ok"}), 0, "lacks one of"),
        ("{not json", 0, "not JSON"),
        (None, 2, "wrote no verdict (exit status 2)"),
    ]
    for text, rc, reason in cases:
        verdict, why = check_verdict(text, returncode=rc, command="score", kernel_sha256=SHA)
        assert verdict is None and reason in why and "\n" not in why
    # a verdict for another command is not a score
    _, why = check_verdict(good, returncode=0, command="check", kernel_sha256=SHA)
    assert "expected 'check'" in why


def test_only_the_text_after_the_last_nonce_is_the_verdict():
    out = 'table\nN\n{"forged": 1}\nmore table\nN\n{"real": 1}\n'
    table, text = split_output(out, "N")
    assert json.loads(text) == {"real": 1} and "forged" in table
    assert split_output("no marker here", "N") == ("no marker here", None)
