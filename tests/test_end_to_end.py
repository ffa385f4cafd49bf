"""End to end through the CLI: score the start kernel and the faster example in one run."""

import json

import pytest

from evals.harness import VERDICT_SCHEMA
from tests.helpers import CPU_KERNELS, START_CPU, run_harness


def _score(kernel, out):
    proc = run_harness("score", "--target", "cpu_attention", "--kernel", str(kernel),
                       "--suite", "smoke", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


@pytest.mark.long
def test_score_start_and_fast_kernels(tmp_path):
    start_proc, start = _score(START_CPU, tmp_path / "start.json")
    _, fast = _score(CPU_KERNELS / "fast.cpp", tmp_path / "fast.json")
    for doc in (start, fast):
        assert doc["schema"] == VERDICT_SCHEMA and doc["status"] == "ok"
        n = len(doc["scenarios"])
        assert doc["aggregates"]["all_correct"] and doc["aggregates"]["passed"] == n >= 2
        for sc in doc["scenarios"]:
            assert sc["correct"]
            if sc["covering"]:  # a covering row is verified and probed, never timed
                assert sc["times_us"] == {} and sc["speedup"] == {}
                continue
            assert sc["times_us"]["candidate"]["median_us"] > 0
            assert sc["speedup"]["sdpa"] > 0 and sc["tflops"] > 0 and sc["gbps"] > 0
        prov = doc["provenance"]
        assert prov["torch"] and prov["harness_version"] and prov["device"]["name"]
        assert "sdpa" in prov["upstreams"]
        assert len(prov["source_sha256"]) == 64  # the code that ran, whatever git says
    # score draws a fresh seed each time
    assert start["seed"] != fast["seed"]
    s_start = start["aggregates"]["geomean_speedup"]["sdpa"]
    s_fast = fast["aggregates"]["geomean_speedup"]["sdpa"]
    assert s_fast > s_start
    # the table with its legend and summary, the time breakdown (adding up to the wall time)
    assert "columns:" in start_proc.stdout and "x_UP" in start_proc.stdout
    assert f"summary: all {len(start['scenarios'])} correct; geomean" in start_proc.stdout
    assert "phases: prepare" in start_proc.stdout and "static checks" in start_proc.stdout
    assert "setup" in start_proc.stdout and "timing loops" in start_proc.stdout
    t = start["timing"]
    parts = t["prepare_s"] + t["build_s"] + t["static_checks_s"] + t["setup_s"]
    parts += t["verify_s"] + t["probe_s"] + t["time_s"]
    assert parts <= t["wall_s"] and t["time_loop_s"] <= t["time_worker_s"] <= t["time_s"]
    phases = {True: {"verify", "probe"}, False: {"verify", "probe", "time"}}
    assert all(set(sc["seconds"]) >= phases[sc["covering"]] for sc in start["scenarios"])
    n = len(start["scenarios"])
    assert f"[{n}/{n}]" in start_proc.stderr


def test_check_with_seed_is_reproducible(tmp_path):
    args = ("check", "--target", "cpu_attention", "--kernel", str(START_CPU), "--suite", "smoke",
            "--seed", "7", "--quiet")
    a = run_harness(*args, "--json", str(tmp_path / "a.json"))
    b = run_harness(*args, "--json", str(tmp_path / "b.json"))
    assert a.returncode == b.returncode == 0
    ea = [s["errors"] for s in json.loads((tmp_path / "a.json").read_text())["scenarios"]]
    eb = [s["errors"] for s in json.loads((tmp_path / "b.json").read_text())["scenarios"]]
    assert ea == eb
    assert a.stderr == ""  # --quiet: no progress lines
