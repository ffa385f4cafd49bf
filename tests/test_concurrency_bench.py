"""benchmarks/concurrency.py: its agent script, its verdict on a round, its bad-input lines."""

import subprocess
import sys

import pytest

from tests.helpers import ROOT, load_benchmark

SCRIPT = ROOT / "benchmarks" / "concurrency.py"
bench = load_benchmark("concurrency")


def _round(scores, geomeans):
    checks = [bench.SelfCheck(g, 0.0, 0.0, 1.0, None if g else "no verdict") for g in geomeans]
    return bench.Round(
        agents=len(scores), wall_s=100.0, runs=3 * len(scores), per_gpu_hour=108.0,
        lock_busy=0.5, timing_share=0.02, lock_waited_s=[0.0, 12.5], build_s=[20.0],
        scores=scores, self_checks=checks,
    )  # fmt: skip


def test_each_agent_edits_before_every_bench_then_submits(tmp_path):
    kernel = tmp_path / "k.cpp"
    kernel.write_text("// kernel\n")
    script = bench.agent_script(kernel, "kernel.cpp", benches=2)
    calls = [(o.message.tool_calls[0].function, o.message.tool_calls[0].arguments) for o in script]
    assert [name for name, _ in calls] == ["bash", "bash", "bench", "bash", "bench", "submit"]
    assert "// kernel" in calls[0][1]["command"]
    assert "/dev/urandom" in calls[1][1]["command"]  # a fresh source, so a fresh build


@pytest.mark.parametrize(
    ("scores", "geomeans", "ok"),
    [
        ([0.3, 0.31], [1.004], True),
        ([0.3, None], [1.0], False),  # a sample without a score
        ([0.3], [1.02], False),  # a self-check off by more than 1%
        ([0.3], [0.989], False),
        ([0.3], [None], False),  # a self-check without a verdict
    ],
)
def test_a_round_passes_only_when_every_sample_scored_and_self_checks_hold(scores, geomeans, ok):
    assert bench.passed([_round(scores, geomeans)]) is ok


def test_the_table_names_each_round_and_self_check():
    text = bench.table([_round([0.3, None], [1.004, None])])
    assert "0.3000x none" in text and "12.5" in text
    assert "1.0040x" in text and "failed: no verdict" in text


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--task", "tasks/nope", "--kernel", "kernels/cpu_attention/start.cpp"], "--task"),
        (["--task", "tasks/cpu_attention", "--kernel", "missing.cpp"], "no such file"),
        (["--task", "tasks/cpu_attention", "--kernel", "kernels/cpu_attention/start.cpp",
          "--agents", "0"], "--agents"),
        (["--task", "tasks/cpu_attention", "--kernel", "kernels/cpu_attention/start.cpp",
          "-T", "suite"], "NAME=VALUE"),
        (["--task", "tasks/cpu_attention", "--kernel", "kernels/cpu_attention/start.cpp",
          "-T", "suite=huge"], "suite"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, said):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_an_interrupted_round_keeps_the_rounds_and_self_checks_done(tmp_path, capsys):
    # `timeout -s INT` on the H200: Inspect returned no log, and the script used to die on it
    check = bench.SelfCheck(1.001, 0.0, 0.0, 32.5, None)
    status = bench.interrupted(tmp_path, [_round([0.17], [1.002])], 2, [check])
    assert status == 130
    doc = bench.json.loads((tmp_path / "concurrency.json").read_text())
    assert len(doc["rounds"]) == 1 and doc["interrupted"]["agents"] == 2
    assert doc["interrupted"]["self_checks"][0]["geomean"] == 1.001
    out = capsys.readouterr()
    assert "interrupted during the round of 2 agent(s)" in out.err
    assert "interrupted round: 1.0010x" in out.out and "0.1700x" in out.out
