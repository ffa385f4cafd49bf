"""The scriptable Inspect wrapper: arm in log names and tags, failing evals fail the command."""

import os
import subprocess
import sys

import pytest

from evals import inspect_preflight
from evals.inspect_cli import option, preflight, tag_arm
from tests.helpers import ROOT


def test_arm_goes_into_the_log_name_pattern_and_tags(monkeypatch):
    # set then delete: monkeypatch records the original state and restores it afterwards
    monkeypatch.setenv("INSPECT_EVAL_LOG_FILE_PATTERN", "")
    monkeypatch.delenv("INSPECT_EVAL_LOG_FILE_PATTERN")
    args = tag_arm(["eval", "tasks/x", "--solver", "evals/open_ended", "--tags", "run7"])
    assert option(args, "--tags") == "run7,arm:open_ended" and args.count("--tags") == 1
    assert os.environ["INSPECT_EVAL_LOG_FILE_PATTERN"] == "{task}-open-ended_{id}"
    assert tag_arm(["list", "logs"]) == ["list", "logs"]


def test_an_eval_that_errors_exits_non_zero_with_one_line(tmp_path):
    # the questioner model cannot be resolved: the sample errors, the log's status is error;
    # `inspect eval` itself exits 0 here
    proc = subprocess.run(
        [sys.executable, "-m", "evals.inspect_cli", "eval", "tasks/cpu_attention",
         "--solver", "kernelseek_model", "-S", "questioner=nosuchprovider/x",
         "--model", "mockllm/model", "-T", "suite=smoke", "-T", "score_suite=smoke",
         "--log-dir", str(tmp_path), "--display", "plain"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("error: ")]
    assert "status error" in line and "kernelseek-model" in line


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["-T", "suite=huge"], "suite='huge' is not a suite of cpu_attention"),
        (["--solver", "nosuch"], "unknown solver 'nosuch'"),
        (["--solver", "evals/nosuch"], "unknown solver 'evals/nosuch'"),
        (["-T", "bogus=1"], "unknown task argument -T bogus"),
        (["-T", "attempts=0"], "attempts must be a positive integer"),
        (["-S", "bogus=1"], "unknown solver argument -S bogus for kernel_agent"),
        (["-M", "custom_outputs=[1]"], "-M custom_outputs cannot come from the command line"),
        (["--solver", "kernelseek", "-S", "questioner=x/y"], "-S questioner for kernelseek"),
    ],
)
def test_a_wrong_solver_or_task_argument_is_one_line_before_inspect_runs(args, text):
    assert text in preflight(["eval", "tasks/cpu_attention", *args, "--model", "mockllm/model"])


def test_good_arguments_pass_the_preflight(monkeypatch):
    monkeypatch.setattr(inspect_preflight, "gpu_problem", lambda target, sandbox: None)
    args = ["eval", "tasks/fa3_hopper/", "--solver", "evals/kernelseek_bank", "-T", "suite=smoke",
            "-T", "upstream=cudnn", "-T", "token_limit=null", "-T", "sandbox=local",
            "-S", "gain_factor=2", "--model", "mockllm/model"]
    assert preflight(args) is None
    assert preflight(["eval", "some/other_task.py", "-T", "anything=1"]) is None


def test_a_docker_sandbox_without_an_engine_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker command at all
    monkeypatch.setattr(inspect_preflight, "has_nvidia_device", lambda: True)
    args = ["eval", "tasks/fa3_hopper", "--model", "mockllm/model", "-T", "sandbox=docker"]
    assert preflight(args).startswith("no Docker engine: the docker command is not on PATH")
    fake = tmp_path / "docker"  # a client whose engine does not answer
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    fake.chmod(0o755)
    assert preflight(args) == (
        "no Docker engine: Cannot connect to the Docker daemon "
        "(start Docker, or run -T sandbox=local (no isolation))"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["-S", "bogus=1"],
        ["--model", "gpt-5"],
    ],
)
def test_the_command_says_a_wrong_argument_in_one_line_and_exits_2(tmp_path, args):
    proc = subprocess.run(
        [sys.executable, "-m", "evals.inspect_cli", "eval", "tasks/cpu_attention",
         "--model", "mockllm/model", *args, "--log-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ")


@pytest.mark.skipif(inspect_preflight.has_nvidia_device(), reason="this machine has a GPU")
@pytest.mark.parametrize(
    ("sandbox", "text"),
    [
        ("local", "fa3_hopper cannot run here: no CUDA GPU: fa3_hopper runs on an NVIDIA GPU"),
        ("docker", "no NVIDIA GPU on this machine: fa3_hopper runs on one"),
    ],
)
def test_a_gpu_task_without_a_gpu_is_one_line_and_exit_2(tmp_path, sandbox, text):
    # issue 41: it was a 73-line traceback (local) or 35 lines of BuildKit output (docker)
    proc = subprocess.run(
        [sys.executable, "-m", "evals.inspect_cli", "eval", "tasks/fa3_hopper",
         "--model", "mockllm/model", "-T", f"sandbox={sandbox}", "--log-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and text in line, line
    assert not list(tmp_path.iterdir())  # nothing ran: no log
