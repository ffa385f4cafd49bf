"""Sandbox hygiene for score: clean environment, private build cache, install hash check."""

import hashlib
import json
import os

import pytest

from evals.harness import get_target
from evals.harness.sandbox.hygiene import clean_environment, verify_install
from evals.harness.worker_link.worker_client import WorkerClient
from tests.helpers import ROOT, START_CPU, run_harness


def test_clean_environment_drops_injection_variables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the caller's folder (an agent's workspace), not the harness's
    env = {"PATH": "/usr/bin", "HOME": "/home/a", "LD_PRELOAD": "/tmp/evil.so",
           "LD_LIBRARY_PATH": "/tmp", "PYTHONPATH": "/workspace", "CUDA_LAUNCH_BLOCKING": "1",
           "CUDA_VISIBLE_DEVICES": "0", "PYTHONSTARTUP": "/tmp/x.py"}
    clean = clean_environment(env)
    for dropped in ("LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_LAUNCH_BLOCKING", "PYTHONSTARTUP"):
        assert dropped not in clean
    libs = clean_environment({**env, "LD_LIBRARY_PATH": f"/usr/lib:/tmp:{os.getcwd()}:rel"})
    assert libs["LD_LIBRARY_PATH"] == "/usr/lib"  # system folders stay, planted ones go
    assert clean["PATH"] == "/usr/bin" and clean["CUDA_VISIBLE_DEVICES"] == "0"
    assert "/workspace" not in clean["PYTHONPATH"].split(os.pathsep)
    assert os.getcwd() not in clean["PYTHONPATH"].split(os.pathsep)
    # the folder holding the harness's own package comes last: a worker or build child finds
    # it even when this process found it in its working folder (a checkout run with -m)
    assert clean["PYTHONPATH"].split(os.pathsep)[-1] == str(ROOT)


def test_verify_install_detects_a_changed_file(tmp_path):
    f = tmp_path / "judge.py"
    f.write_text("original")
    hashes = tmp_path / "INSTALL_HASHES.txt"
    hashes.write_text(f"{hashlib.sha256(b'original').hexdigest()}  {f}\n")
    assert verify_install(hashes) is None
    f.write_text("tampered")
    failure = verify_install(hashes)
    assert failure.code == "harness_modified" and str(f) in failure.reason
    assert verify_install(None) is None


def test_score_refuses_when_the_harness_changed_since_install(tmp_path):
    hashes = tmp_path / "INSTALL_HASHES.txt"
    hashes.write_text(f"{'0' * 64}  {START_CPU}\n")
    out = tmp_path / "v.json"
    env = {**os.environ, "KERNELSEEK_INSTALL_HASHES": str(hashes)}
    proc = run_harness("score", "--target", "cpu_attention", "--kernel", str(START_CPU),
                       "--suite", "smoke", "--json", str(out), env=env)
    assert proc.returncode == 1
    doc = json.loads(out.read_text())
    assert doc["failure"]["code"] == "harness_modified"


@pytest.mark.long  # a whole score with two fresh builds: over a minute beside load
def test_score_builds_afresh_in_a_private_cache(tmp_path):
    out = tmp_path / "v.json"
    proc = run_harness("score", "--target", "cpu_attention", "--kernel", str(START_CPU),
                       "--suite", "smoke", "--json", str(out))
    assert proc.returncode == 0, proc.stdout
    build = json.loads(out.read_text())["build"]
    assert not build["cached"] and build["seconds"] > 0
    assert os.environ["KERNELSEEK_CACHE"] not in build["library"]


def test_openmp_threads_are_pinned_for_cpu_targets_only(tmp_path):
    outer = {"PATH": "/usr/bin", "LD_PRELOAD": "/tmp/evil.so"}
    cpu = WorkerClient(get_target("cpu_attention"), None, tmp_path / "log", clean_env=True)
    env = cpu.environment(outer)
    assert env["OMP_PROC_BIND"] == "close" and "LD_PRELOAD" not in env
    gpu = WorkerClient(get_target("fa3_hopper"), None, tmp_path / "log")
    env = gpu.environment(outer)  # pinning would tie the CUDA driver's threads to one core
    assert "OMP_PROC_BIND" not in env and "OMP_PLACES" not in env and env["PATH"] == "/usr/bin"


def test_workers_of_check_and_bench_find_the_harness_on_a_host_where_it_is_not_installed(
    tmp_path,
):
    # check and bench keep the caller's environment, but the worker runs with ``python -P``:
    # with PYTHONPATH holding only other folders it must still find ``evals`` (last on the path)
    from evals.harness.sandbox.hygiene import package_root

    client = WorkerClient(get_target("cpu_attention"), None, tmp_path / "log")
    env = client.environment({"PATH": "/usr/bin", "PYTHONPATH": "/tmp/site"})
    assert env["PYTHONPATH"].split(os.pathsep) == ["/tmp/site", package_root()]
    clean = WorkerClient(get_target("cpu_attention"), None, tmp_path / "log", clean_env=True)
    paths = clean.environment({"PATH": "/usr/bin"})["PYTHONPATH"].split(os.pathsep)
    assert paths[-1] == package_root() and paths.count(package_root()) == 1
