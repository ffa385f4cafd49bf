"""Issue 39: the local sandbox cannot keep the agent from the scorer, and every place a score
goes says so. The task warns at each sample's start, the score records ``isolation``, the dataset
carries it (``unknown`` for older logs), the leaderboard marks it and ``--publish`` refuses it.

The harness is faked here (the score's plumbing is what is under test; tests/test_inspect_tasks.py
scores a real kernel in the local sandbox), and so is the stopping of the agent's processes: with a
container's settings it would kill every process of this user."""

import subprocess
import sys

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, mean, scorer
from inspect_ai.solver import solver
from inspect_ai.util import sandboxenv
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

from evals.bench import TaskSettings, kernel_task
from evals.bench.config.settings import LOCAL_WARNING
from evals.bench.scoring import scorer as scorer_module
from evals.bench.scoring.harness_exec import HarnessRun
from evals.results import build, load, render
from evals.results.rows import read_rows
from tests.helpers import ROOT

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa")
VALUE = {"success": 1.0, "speedup": 1.2, "speedup_vs_fastest": 1.1, "passed": 1.0, "coverage": 1.0}


@sandboxenv(name="kernelseek_stand_in_container")
class StandInContainer(LocalSandboxEnvironment):
    """A sandbox that is not Inspect's local one, as a docker or k8s sandbox is not (it runs
    in a temporary folder here: no Docker needed)."""

    @classmethod
    async def sample_init(cls, task_name, config, metadata):
        return {"default": cls()}


@solver
def _noop():
    async def solve(state, generate):
        return state

    return solve


@pytest.fixture
def fake_harness(monkeypatch):
    async def run_harness(settings, command, **kwargs):
        return HarnessRun(1, "", None, "no kernel built (faked)", "0" * 64, None)

    async def stop(*, container):
        return {"killed": [], "all_user_processes": container}

    monkeypatch.setattr(scorer_module, "run_harness", run_harness)
    monkeypatch.setattr(scorer_module, "stop_agent_processes", stop)


def _scored(tmp_path, sandbox_arg, inspect_sandbox=None):
    settings = TaskSettings(**SMOKE, sandbox=sandbox_arg)
    task = kernel_task(settings, version=1, solver=_noop(), root=ROOT)
    [log] = inspect_eval(task, model="mockllm/model", sandbox=inspect_sandbox,
                         log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    # Inspect leads a sample's log message with a line naming the sample
    warnings = [e.message.message.splitlines()[-1] for e in sample.events
                if e.event == "logger" and e.message.level == "warning"]
    return sample.scores["kernel_speedup"], warnings


def test_local_sandbox_warns_at_start_and_scores_are_marked_local(tmp_path, fake_harness):
    score, warnings = _scored(tmp_path, "local")
    assert score.metadata["isolation"] == "local"
    assert warnings == [LOCAL_WARNING] and "\n" not in LOCAL_WARNING
    # the row built from that log carries it
    [row] = read_rows([tmp_path])
    assert row["isolation"] == "local"


def test_container_sandbox_scores_are_marked_container(tmp_path, fake_harness):
    score, warnings = _scored(tmp_path, "docker", "kernelseek_stand_in_container")
    assert score.metadata["isolation"] == "container" and warnings == []
    [row] = read_rows([tmp_path])
    assert row["isolation"] == "container"


def test_inspect_local_sandbox_overriding_a_container_argument_is_local(tmp_path, fake_harness):
    # `inspect eval ... --sandbox local` replaces the task's docker sandbox: the score says so
    score, warnings = _scored(tmp_path, "docker", "local")
    assert score.metadata["isolation"] == "local" and warnings == [LOCAL_WARNING]
    # and the agent's processes are stopped as on a host (the workspace's), never "all": on a
    # host that is every process of the user
    assert score.metadata["stopped_processes"]["all_user_processes"] is False


@scorer(metrics=[mean()], name="kernel_speedup")
def _recorded():
    async def score(state, target):
        if state.sample_id == "err":
            raise RuntimeError("harness_error: no verdict")
        isolation = {"box": "container", "host": "local", "old": None}[state.sample_id]
        meta = {"isolation": isolation} if isolation else {}  # "old": a log from before
        return Score(value=VALUE, metadata=meta)

    return score


def _dataset(tmp_path, arms):
    """A dataset of one log per arm, each sample scored with the isolation its id names."""
    for arm, ids in arms.items():
        inspect_eval(
            Task(dataset=[Sample(input="x", id=i) for i in ids], solver=_noop(),
                 scorer=_recorded()),
            model="mockllm/model", display="none", log_dir=str(tmp_path / "logs"),
            fail_on_error=False, metadata={"settings": {"target": "cpu_attention"}, "arm": arm},
        )
    build([tmp_path / "logs"], tmp_path / "ds", note=None)
    return tmp_path / "ds"


def _results(*args):
    return subprocess.run([sys.executable, "-m", "evals.results", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_rows_leaderboard_and_publication(tmp_path):
    ds = _dataset(tmp_path, {"boxed": ["box"], "mixed": ["box", "host", "old", "err"]})
    runs, _ = load(ds)
    got = dict(zip(runs["arm"] + "/" + runs["sample_id"], runs["isolation"], strict=True))
    assert got == {"boxed/box": "container", "mixed/box": "container", "mixed/host": "local",
                   "mixed/old": "unknown", "mixed/err": "unknown"}
    assert "| isolation |" in (ds / "README.md").read_text()
    text = render(ds, tmp_path / "lb").read_text()
    table: dict[str, str] = {}  # each arm's first row: the arm table's
    for line in text.splitlines():
        if line.startswith("| "):
            table.setdefault(line.split(" | ")[0], line)
    assert table["| boxed"].endswith("| container |")
    # the harness error is left out (and carries no score): 3 runs kept, 2 not isolated
    assert table["| mixed"].endswith("| container 1, local 1, unknown 1 (!) |")
    assert "(!) Not scored in a container" in text and "--publish" in text
    # publication refuses them in one line, writing nothing
    for args in (["build", str(tmp_path / "logs"), "--out", str(tmp_path / "pub-ds")],
                 ["leaderboard", "--dataset", str(ds), "--out", str(tmp_path / "pub-lb")]):
        proc = _results(*args, "--publish")
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "refusing to publish: 2 run(s) not scored in a container" in proc.stderr
        assert "1 local, 1 unknown" in proc.stderr
    assert not (tmp_path / "pub-ds").exists() and not (tmp_path / "pub-lb").exists()
    with pytest.raises(ValueError, match="refusing to publish"):
        render(ds, tmp_path / "pub-lb", publish=True)


def test_an_isolated_dataset_publishes_unmarked(tmp_path):
    ds = _dataset(tmp_path, {"boxed": ["box"]})
    proc = _results("leaderboard", "--dataset", str(ds), "--out", str(tmp_path / "lb"),
                    "--publish")
    assert proc.returncode == 0, proc.stderr
    assert "Not scored in a container" not in (tmp_path / "lb" / "README.md").read_text()


def test_a_dataset_from_before_the_record_reads_unknown_and_is_not_published(tmp_path):
    import pandas as pd

    # the shipped rows as a dataset built before dataset version 4 holds them: no column
    old = tmp_path / "old"
    old.mkdir()
    shipped = pd.read_parquet(ROOT / "results" / "dataset" / "runs.parquet")
    shipped.drop(columns=["isolation"]).to_parquet(old / "runs.parquet")
    runs, _ = load(old)
    assert len(runs) and set(runs["isolation"]) == {"unknown"}
    proc = _results("leaderboard", "--dataset", str(old), "--out", str(tmp_path / "lb"),
                    "--publish")
    assert proc.returncode == 2 and "unknown" in proc.stderr
