"""A machine without what a target needs: one line, exit status 2, code ``environment``."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from evals.harness import Code
from evals.harness.pipeline.environment import environment_fault
from evals.harness.targets import get_target
from tests.helpers import ROOT, START_CPU, run_harness

NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")


def _one_line(proc, text):
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and text in line


@NO_GPU
@pytest.mark.parametrize(
    ("target", "args"),
    [
        ("fa3_hopper", ["bench", "--candidate-upstream", "fa3"]),
        ("fa3_hopper", ["score", "--kernel", "kernels/fa3_hopper/start.cu"]),
        ("fa4_blackwell", ["score", "--kernel", "kernels/fa4_blackwell/start.cu"]),
    ],
)
def test_a_gpu_target_without_a_gpu_says_so_in_one_line(tmp_path, target, args):
    out = tmp_path / "v.json"
    proc = run_harness(*args, "--target", target, "--json", str(out))
    _one_line(proc, f"no CUDA GPU: {target} runs on an NVIDIA GPU")
    doc = json.loads(out.read_text())
    assert doc["status"] == "error" and doc["failure"]["code"] == "environment"
    assert doc["kernel"].get("sha256") or args[0] == "bench"  # the scorer checks it


@NO_GPU
@pytest.mark.parametrize("target", ["fa3_hopper", "fa4_blackwell"])
def test_the_gpu_benchmark_without_a_gpu_says_so_in_one_line(tmp_path, target):
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_target.py", "--target", target, "--out", str(tmp_path),
         "selfcheck-dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    _one_line(proc, "selfcheck-dev: no CUDA GPU")


@NO_GPU
def test_the_gated_batch_prototype_without_a_gpu_says_so_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_gated_batch.py", "--upstream", "fa3", "--out",
         str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    _one_line(proc, "no CUDA GPU: fa3_hopper runs on an NVIDIA GPU")


def test_no_compiler_is_one_line_before_any_build(tmp_path):
    env = {**os.environ, "CXX": str(tmp_path / "no-such-compiler")}
    proc = run_harness(
        "check",
        "--target",
        "cpu_attention",
        "--kernel",
        str(START_CPU),
        "--suite",
        "smoke",
        env=env,
    )
    _one_line(proc, "no C++ compiler")


def test_each_missing_piece_of_a_gpu_target_has_its_reason(monkeypatch):
    import torch.utils.cpp_extension as cpp_extension

    target = get_target("fa3_hopper")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", None)
    failure = environment_fault(target, building=True)
    assert failure.code == Code.ENVIRONMENT and failure.reason.startswith("no CUDA toolkit")
    try:
        from evals.targets.fa3_hopper.upstreams import import_fa3

        import_fa3()
    except Exception:
        failure = environment_fault(target, building=False)  # a self-check builds nothing
        assert failure.code == Code.ENVIRONMENT
        assert failure.reason.startswith("no FlashAttention-3")
    assert environment_fault(get_target("cpu_attention"), building=True) is None


def test_a_full_disk_while_building_is_the_machines_fault_not_the_kernels(tmp_path):
    cxx = tmp_path / "c++"  # a compiler whose output file cannot be written
    real = shutil.which("c++")
    cxx.write_text(f"#!/bin/sh\ncase \"$*\" in *-c*) ;; *) exec {real} \"$@\";; esac\n"
                   "echo 'fatal error: error writing to /tmp/cc1.s: "
                   "No space left on device' >&2\nexit 1\n")
    cxx.chmod(0o755)
    env = {**os.environ, "CXX": str(cxx)}
    proc = run_harness("check", "--target", "cpu_attention", "--kernel", str(START_CPU),
                       "--suite", "smoke", "--cache-dir", str(tmp_path / "cache"), "--quiet",
                       env=env)
    _one_line(proc, "the disk is full while building")


def test_a_kernel_that_says_the_disk_is_full_is_still_its_own_build_error():
    from evals.harness.building.build import SOURCE, _disk_full

    said = (f"{SOURCE}:3:2: error: #error No space left on device\n"
            "    3 | #error No space left on device\n      |  ^~~~~\n")
    assert _disk_full(said) is None
    assert _disk_full("ninja: error: No space left on device\n") is not None
