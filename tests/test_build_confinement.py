"""Integrity IV: no candidate code outside its confined worker, nothing of a run outlives it,
and whose fault a failure is decided by the parent.

The build links the candidate and never loads it (``build_time_plant.cpp`` plants a start-up
file in site-packages when its library is loaded: it does under a plain load, never under the
build); the build's processes and the include scan's preprocessor are confined; what a build
or worker leaves running is found and killed; a code only the parent gives, reported by the
candidate's worker, is the candidate's.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evals.harness import Code, RunSettings, evaluate, get_target
from evals.harness.building.build import build
from evals.harness.sandbox.confine import confined_argv
from evals.harness.sandbox.footprint import Watch
from evals.harness.worker_link.worker_client import WorkerClient
from tests.helpers import ROOT

PLANT = ROOT / "tests" / "cheats" / "cpu_attention" / "build_time_plant.cpp"
PLANTED = "kernelseek_build_time_plant.pth"


def _site_packages() -> Path:
    import torch

    return Path(torch.__file__).resolve().parent.parent


@pytest.fixture
def plant_file():
    path = _site_packages() / PLANTED
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


def test_the_build_links_the_plant_and_never_loads_it(tmp_path, plant_file):
    built = build(get_target("cpu_attention"), PLANT, cache_dir=tmp_path / "cache")
    assert built.failure is None and built.library is not None and built.library.is_file()
    assert not plant_file.exists(), "the build ran the candidate's static initialiser"
    assert str(built.confinement["writes"]).startswith("active"), built.confinement
    assert str(built.confinement["seccomp"]).startswith("active"), built.confinement
    # the same library, loaded as cpp_extension.load used to: the plant is real
    load = f"import torch; torch.ops.load_library({str(built.library)!r})"
    proc = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, timeout=120)
    assert "kernelseek-cheat: planted" in proc.stdout, proc.stdout + proc.stderr
    assert plant_file.exists()


def test_a_check_of_the_plant_is_its_honest_run_and_plants_nothing(plant_file):
    verdict = evaluate(RunSettings("check", "cpu_attention", PLANT, suite="smoke"))
    assert not plant_file.exists()
    assert verdict.status == "ok", verdict.failure
    assert verdict.checks["footprint"].startswith("passed")


def test_the_confinement_launcher_refuses_writes_elsewhere_and_sockets(tmp_path):
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    mine.mkdir()
    script = (
        f"open({str(mine / 'ok')!r}, 'w').write('x')\n"
        "import socket\n"
        "try:\n    socket.socket()\nexcept OSError as e:\n    print('socket refused', e.errno)\n"
        f"try:\n    open({str(elsewhere)!r}, 'w')\nexcept OSError as e:\n"
        "    print('write refused', e.errno)\n"
    )
    argv = confined_argv([str(mine)], [sys.executable, "-c", script])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "socket refused" in proc.stdout and "write refused" in proc.stdout
    assert (mine / "ok").read_text() == "x" and not elsewhere.exists()


ESCAPE = textwrap.dedent(
    """
    import os, sys, time
    from evals.harness.sandbox.process_tree import become_subreaper, children, reap_strays
    assert become_subreaper()
    r, w = os.pipe()
    if os.fork() == 0:          # the build child
        os.setsid()             # leaves the session and the process group
        if os.fork() == 0:      # what it leaves running
            os.write(w, str(os.getpid()).encode()); os.close(w)
            time.sleep(300)
        os._exit(0)
    stray = int(os.read(r, 32))
    while stray not in children():  # re-parented to this process once its parent is gone
        time.sleep(0.01)
    found = reap_strays()
    print(len(found), stray, os.path.exists(f"/proc/{stray}"))
    """
)


def test_a_process_that_escaped_its_session_is_found_and_killed():
    proc = subprocess.run(
        [sys.executable, "-c", ESCAPE], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    count, _, alive = proc.stdout.split()
    assert count == "1" and alive == "False"


def test_a_harness_called_in_process_leaves_its_hosts_children_alone():
    from evals.harness.sandbox.process_tree import reap_strays

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert reap_strays() == [] and sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("code", ["harness_error", "environment", "device_busy", "no_such_code"])
def test_a_code_only_the_parent_gives_is_the_candidates_when_its_worker_reports_it(code):
    target = get_target("cpu_attention")
    raw = {"code": code, "reason": "composed in the candidate's process"}
    candidate = WorkerClient(target, Path("/nonexistent/candidate.so"))
    upstreams = WorkerClient(target, None)
    assert candidate._reported(raw).code == Code.EXCEPTION
    assert code in candidate._reported(raw).reason
    assert upstreams._reported(raw).code in {Code.HARNESS_ERROR, Code.ENVIRONMENT, Code.DEVICE_BUSY}


def test_a_build_child_that_fails_after_reading_the_candidate_is_its_build_error(
    tmp_path, monkeypatch
):
    # a crash, a signal, a missing line: once the child is confined and compiling, the
    # candidate's source is in play, so the failure is its own (and never cached)
    fake = tmp_path / "python"
    record = json.dumps({"writes": "active", "seccomp": "active"})
    fake.write_text(f"#!/bin/sh\necho 'KERNELSEEK-BUILD confinement {record}'\nkill -9 $$\n")
    fake.chmod(0o755)
    source = tmp_path / "k.cpp"
    source.write_text("// unique: attribution test\n")
    monkeypatch.setattr(sys, "executable", str(fake))
    failed = build(get_target("cpu_attention"), source, cache_dir=tmp_path / "cache")
    assert failed.failure is not None and failed.failure.code == Code.BUILD_ERROR
    assert failed.confinement == {"writes": "active", "seccomp": "active"}
    assert not list((tmp_path / "cache").glob("*/result.json"))


@pytest.mark.parametrize(
    ("confined", "code"), [(False, "sandbox_violation"), (True, "environment")]
)
def test_a_changed_start_up_file_is_the_candidates_unless_it_could_not_write(
    tmp_path, monkeypatch, confined, code
):
    from evals.harness.sandbox import footprint
    from evals.harness.verdict.record import Verdict

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(footprint, "protected_places", lambda _: ([(site, "*.pth")], []))
    watch = Watch(None)
    (site / "planted.pth").write_text("import evil\n")
    verdict = Verdict("score", "cpu_attention", "smoke", {}, None, "ok")
    watch.report(verdict, [], confined=confined)
    assert verdict.failure is not None and verdict.failure.code.value == code
    assert "planted.pth" in verdict.failure.reason


def test_a_harness_error_forged_onto_the_channel_is_never_the_scorers_fault():
    # the kernel writes an answer frame with code harness_error onto its worker's channel: the
    # parent reads it as the candidate's exception, so the scorer sees no fault to leave out
    from evals.bench.scoring.faults import verdict_fault

    cheat = ROOT / "tests" / "cheats" / "cpu_attention" / "forged_harness_error.cpp"
    verdict = evaluate(RunSettings("check", "cpu_attention", cheat, suite="smoke"))
    codes = [r.failure.code for r in verdict.results if r.failure is not None]
    assert codes and codes[0] == Code.EXCEPTION
    assert verdict.status == "failed" and verdict_fault(verdict) is None
