"""A run that failed for the harness's or the environment's reasons is marked in the dataset
and left out of the leaderboard, counted; results commands never overwrite shipped data."""

import subprocess
import sys

import pandas as pd
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, mean, scorer
from inspect_ai.solver import solver

from evals.results import build, load, render
from evals.results.__main__ import shipped
from evals.results.summary import summarise_arm
from tests.helpers import ROOT

VALUE = {"success": 1.0, "speedup": 1.2, "speedup_vs_fastest": 1.1, "passed": 1.0, "coverage": 1.0}
ZERO = dict.fromkeys(VALUE, 0.0)


@solver
def _noop():
    async def solve(state, generate):
        return state

    return solve


@scorer(metrics=[mean()], name="kernel_speedup")
def _verdicts():
    async def score(state, target):
        if state.sample_id == "env":  # what the harness now raises for an environment fault
            raise RuntimeError("harness_error: no CUDA GPU")
        if state.sample_id == "old":  # a harness fault scored as a failure (older logs)
            failure = {"code": "harness_error", "reason": "CUDA_HOME is not set"}
            return Score(value=ZERO, metadata={"failure": failure})
        if state.sample_id == "wrong":  # the candidate's own failure: counts against the arm
            failure = {"code": "inaccurate", "reason": "max error 0.5"}
            return Score(value=ZERO, metadata={"failure": failure})
        return Score(value=VALUE, metadata={})

    return score


def _results(*args):
    return subprocess.run(
        [sys.executable, "-m", "evals.results", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_harness_errors_are_marked_and_left_out_counted(tmp_path):
    samples = [Sample(input="x", id=i) for i in ("ok", "wrong", "env", "old")]
    eval(
        Task(dataset=samples, solver=_noop(), scorer=_verdicts()),
        model="mockllm/model",
        display="none",
        log_dir=str(tmp_path / "logs"),
        fail_on_error=False,
        metadata={"settings": {"target": "cpu_attention"}, "arm": "arm"},
    )
    build([tmp_path / "logs"], tmp_path / "ds", note=None)
    runs, _ = load(tmp_path / "ds")
    got = dict(zip(runs["sample_id"], runs["outcome"], strict=True))
    assert got == {
        "ok": "scored",
        "wrong": "scored",
        "env": "harness_error",
        "old": "harness_error",
    }
    reasons = dict(zip(runs["sample_id"], runs["outcome_reason"], strict=True))
    assert "no CUDA GPU" in reasons["env"] and "CUDA_HOME" in reasons["old"]
    arm = summarise_arm("arm", runs)
    assert (arm.runs, arm.excluded, arm.successes) == (2, 2, 1)
    text = render(tmp_path / "ds", tmp_path / "lb").read_text()
    assert "| arm | 2 | 2 | 1/2 |" in text and "Runs left out: 2" in text
    assert "dataset version: 4" in (tmp_path / "ds" / "README.md").read_text()


DRY = "dry run on sm_90, not a Blackwell measurement"


@scorer(metrics=[mean()], name="kernel_speedup")
def _arch_verdicts():
    async def score(state, target):
        device = {"name": "NVIDIA H200", "arch": "sm_90a", "note": DRY}
        if state.sample_id == "b200":
            device = {"name": "NVIDIA B200", "arch": "sm_100a"}
        return Score(value=VALUE, metadata={"provenance": {"device": device}})

    return score


def test_dry_runs_are_marked_and_kept_apart_from_measurements(tmp_path):
    eval(
        Task(dataset=[Sample(input="x", id=i) for i in ("b200", "h200")], solver=_noop(),
             scorer=_arch_verdicts()),
        model="mockllm/model",
        display="none",
        log_dir=str(tmp_path / "logs"),
        metadata={"settings": {"target": "fa4_blackwell"}, "arm": "arm"},
    )
    build([tmp_path / "logs"], tmp_path / "ds", note=None)
    runs, _ = load(tmp_path / "ds")
    rows = {r.sample_id: r for r in runs.itertuples()}
    assert rows["b200"].arch == "sm_100a" and pd.isna(rows["b200"].dry_run)
    assert rows["h200"].arch == "sm_90a" and rows["h200"].dry_run == DRY
    text = render(tmp_path / "ds", tmp_path / "lb").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    sections = [h for h in headings if "/ mockllm/model" in h]
    assert len(sections) == 2 and sum(DRY in h for h in sections) == 1, headings


def test_results_commands_refuse_to_overwrite_shipped_data(tmp_path):
    for args in (
        ["build", "logs", "--out", "results/dataset/"],
        ["leaderboard", "--out", "results/leaderboard/"],
    ):
        proc = _results(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "shipped data" in proc.stderr and "--force" in proc.stderr
    # --force overwrites; a folder git does not track needs nothing
    repo = tmp_path / "repo"
    (repo / "lb").mkdir(parents=True)
    (repo / "lb" / "README.md").write_text("shipped\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "lb"], check=True)
    subprocess.run([*git, "commit", "-qm", "shipped"], check=True)
    lb = ["leaderboard", "--dataset", str(ROOT / "results" / "dataset"), "--out"]
    assert _results(*lb, str(repo / "lb")).returncode == 2
    assert (repo / "lb" / "README.md").read_text() == "shipped\n"
    # --force passes the check (this build then stops at its missing logs, writing nothing)
    proc = _results("build", str(tmp_path / "none"), "--out", str(repo / "lb"), "--force")
    assert proc.returncode == 2 and "no such log" in proc.stderr
    assert shipped(repo / "lb") and not shipped(tmp_path) and not shipped(tmp_path / "new")
