"""From runs to results: logs of two arms x 3 epochs made here with a scripted mockllm agent
(benchmarks/inspect_replay.py, the flow the H200 uses, on cpu_attention), then the dataset
(python -m evals.results build) and the leaderboard, checked against the definitions."""

import contextlib
import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from inspect_ai import eval as inspect_eval

from evals.bench import kernel_agent
from evals.replay import replay_model, submit_kernel
from evals.results import load
from evals.results.summary import compare, summarise_arm
from evals.stats import min_p, permutation_test, wilson
from tests.helpers import CPU_KERNELS, ROOT, START_CPU

SMOKE = ["-T", "suite=smoke", "-T", "score_suite=smoke"]
EPOCHS = 3


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay")
    proc = subprocess.run(
        [sys.executable, "benchmarks/inspect_replay.py", "--task", "tasks/cpu_attention", *SMOKE,
         "--kernel", str(CPU_KERNELS / "fast.cpp"), "--kernel", str(START_CPU),
         "--epochs", str(EPOCHS), "--max-samples", "3", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=1500,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "leaderboard" / "README.md").exists()
    # one more run of the `start` arm that fails, on a new seed (seed_offset: no repeat of 1..3)
    with contextlib.chdir(ROOT):  # Inspect loads task files by relative path
        [log] = inspect_eval(
            "tasks/cpu_attention", solver=kernel_agent(attempts=1),
            model=replay_model(submit_kernel(CPU_KERNELS / "wrong.cpp", "kernel.cpp")),
            task_args={"suite": "smoke", "score_suite": "smoke", "seed_offset": EPOCHS},
            metadata={"arm": "replay:start"}, log_dir=str(out / "logs"), display="none",
        )
    assert log.status == "success"
    for args in (["build", str(out / "logs"), "--out", str(out / "dataset")],
                 ["leaderboard", "--dataset", str(out / "dataset"), "--out",
                  str(out / "leaderboard")]):
        proc = subprocess.run([sys.executable, "-m", "evals.results", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.long
def test_dataset_has_one_tidy_row_per_run(runs_dir):
    runs, reference = load(runs_dir / "dataset")
    assert len(runs) == 2 * EPOCHS + 1 and set(runs["kind"]) == {"measured"}
    assert set(reference["kind"]) == {"reference"} and "kind" in reference
    assert sorted(runs.groupby("arm").size().items()) == [("replay:fast", 3), ("replay:start", 4)]
    start = runs[runs["arm"] == "replay:start"]
    assert sorted(start["seed"]) == [1, 2, 3, 4]  # the extra run drew a new seed
    assert sorted(start["success"]) == [0, 1, 1, 1]
    row = runs.iloc[0]
    assert row["task"] == "cpu_attention" and row["task_version"] >= 4
    assert row["harness_version"] and row["log_path"] and row["kernel_sha256"]
    assert row["budget_agent_messages"] > 0 and row["limit_evaluations"] == 60
    assert json.loads(row["arm_settings"])["attempts"] == 1
    assert any(c.startswith("cat_") for c in runs) and "up_sdpa_coverage" in runs
    # loadable as plain parquet (what datasets.load_dataset("parquet", ...) reads)
    assert len(pd.read_parquet(runs_dir / "dataset" / "runs.parquet")) == len(runs)
    card = (runs_dir / "dataset" / "README.md").read_text()
    assert "## Schema" in card and "## Licence" in card and "## Provenance" in card


@pytest.mark.long
def test_success_rate_and_conditional_geomean_follow_the_definitions(runs_dir):
    runs, _ = load(runs_dir / "dataset")
    start = runs[runs["arm"] == "replay:start"]
    s = summarise_arm("replay:start", start)
    ok = [v for v, good in zip(start["speedup"], start["success"], strict=True) if good == 1]
    assert s.successes == 3 and s.runs == 4 and s.success_ci == wilson(3, 4)
    assert s.geomean == pytest.approx(math.exp(sum(map(math.log, ok)) / 3))
    # the failed run is not averaged in as 0
    assert s.geomean > sum(start["speedup"]) / 4
    lo, hi = s.geomean_ci.bounds
    assert len(set(ok)) > 1 and lo < s.geomean < hi  # epochs differ: the interval has width
    assert s.geomean_ci.method == "t" and s.excluded == 0 and set(start["outcome"]) == {"scored"}


@pytest.mark.long
def test_permutation_test_detects_the_planted_difference_not_a_null_one(runs_dir):
    runs, _ = load(runs_dir / "dataset")
    fast = summarise_arm("replay:fast", runs[runs["arm"] == "replay:fast"])
    start = summarise_arm("replay:start", runs[runs["arm"] == "replay:start"])
    twin = summarise_arm("twin", runs[runs["arm"] == "replay:start"])
    planted, _, null = compare([fast, start, twin])
    assert (planted.a, planted.b, null.a, null.b) == ("replay:fast", "replay:start",
                                                      "replay:start", "twin")
    assert planted.ratio > 1.5
    assert planted.ratio == pytest.approx(fast.geomean / start.geomean)
    lo, hi = planted.ratio_ci.bounds
    assert planted.ratio_ci.method == "Welch t" and lo < planted.ratio < hi
    n_fast, n_start = len(fast.speedups), len(start.speedups)
    assert planted.min_p == pytest.approx(min_p(n_fast, n_start))
    assert planted.min_p <= planted.p_value + 1e-12
    assert planted.p_value == pytest.approx(permutation_test(fast.speedups, start.speedups))
    # a busy machine can fail a fast run or blur its timing; when the arms separate, the split
    # and its mirror are the most extreme there are (3 successful runs against 3: p = 2 / 20)
    if min(fast.speedups) > max(start.speedups):
        assert planted.p_value <= 2 / math.comb(n_fast + n_start, n_fast) + 1e-12
    assert null.p_value == 1.0 and null.ratio == pytest.approx(1.0)
    assert null.min_p_holm == pytest.approx(min(1.0, 3 * min(planted.min_p, null.min_p)))


@pytest.mark.long
def test_leaderboard_reports_each_part_separately(runs_dir):
    text = (runs_dir / "leaderboard" / "README.md").read_text()
    for part in ("95% Wilson", "95% interval", "] t |", "Welch t", "fast_1.0", "p (Holm)",
                 "smallest p", "epochs needed", "absolute difference", "left out",
                 "1.13x vs 0.5x", "Reference figures", "replay:fast", "replay:start"):
        assert part in text, part
    assert list((runs_dir / "leaderboard").glob("*__speedup.png"))
    assert list((runs_dir / "leaderboard").glob("*__categories.png"))


def test_results_commands_reject_bad_input_with_one_line(tmp_path):
    for args in (["build", str(tmp_path / "nothing"), "--out", str(tmp_path / "d")],
                 ["build", str(tmp_path), "--out", str(tmp_path / "d")],
                 ["leaderboard", "--dataset", str(tmp_path), "--out", str(tmp_path / "l")]):
        proc = subprocess.run([sys.executable, "-m", "evals.results", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("error: ")
