"""The candidate's process can write nowhere that matters (issue: integrity III, class 2).

Landlock confines the candidate's worker's file changes to its private folder; the parent
records the places that outlive a run (site-packages start-up files, the harness, the build
cache's records) before the candidate starts and fails the run if they changed; the files a
worker leaves in its private folder are reported and removed.
"""

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.sandbox import footprint
from evals.landlock import restrict_writes
from tests.helpers import ROOT, START_CPU

CONFINED = """
import os, sys
sys.path.insert(0, {root!r})
from evals.landlock import restrict_writes
print(restrict_writes([{ok!r}]))
for path in ({inside!r}, {outside!r}):
    try:
        with open(path, "w") as f:
            f.write("x")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.errno)
try:
    os.rename({inside!r}, {moved!r})
    print("moved out")
except OSError as exc:
    print("refused rename", exc.errno)
"""


def _landlock_available():
    probe = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
         "from evals.landlock import restrict_writes; print(restrict_writes([]))"],
        capture_output=True, text=True, check=True,
    )
    return probe.stdout.startswith("active")


def test_a_confined_process_writes_only_in_its_folder(tmp_path):
    if not _landlock_available():
        pytest.skip("this kernel has no Landlock")
    ok = tmp_path / "ok"
    ok.mkdir()
    code = CONFINED.format(root=str(ROOT), ok=str(ok), inside=str(ok / "a"),
                           outside=str(tmp_path / "b"), moved=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("active (Landlock ABI ")
    assert f"wrote {ok / 'a'}" in out
    assert f"refused {tmp_path / 'b'} 13" in out and "refused rename 13" in out
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_restrict_writes_says_why_when_it_cannot_hold(tmp_path):
    # a missing folder cannot be ruled on: said, not raised (in a child: it is irreversible)
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from evals.landlock import "
            f"restrict_writes; print(restrict_writes([{str(tmp_path / 'missing')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("unavailable: ")
    assert callable(restrict_writes)


def test_the_watch_fails_a_run_that_planted_a_start_up_file(tmp_path, monkeypatch):
    site, cache = tmp_path / "site-packages", tmp_path / "cache"
    (cache / "baseline-abc").mkdir(parents=True)
    site.mkdir()
    (site / "ok.pth").write_text("# installed before the run\n")
    record = cache / "baseline-abc" / "symbols.json"
    record.write_text("[]")
    monkeypatch.setattr(footprint, "protected_places", lambda root: (
        [(site, p) for p in footprint.STARTUP_FILES], [(cache, "baseline-*/*")]))
    watch = footprint.Watch(cache)
    assert watch.failure() is None
    (cache / "baseline-new").mkdir()
    (cache / "baseline-new" / "symbols.json").write_text("[]")  # another run's new record
    assert watch.failure() is None
    (site / "evil.pth").write_text("import os\n")
    failure = watch.failure()
    assert failure.code == Code.SANDBOX_VIOLATION
    assert f"created {site / 'evil.pth'}" in failure.reason
    (site / "evil.pth").unlink()
    record.write_text('["widened"]')
    assert f"changed {record}" in watch.failure().reason


HOSTILE_WRITER = '''#!{python}
"""A candidate's worker whose candidate writes a start-up file into site-packages (test only)."""
import sys

sys.path.insert(0, {root!r})
from evals import worker_entry
from evals.harness.worker import serve as worker

honest_load = worker.Worker.load_candidate


def load_and_write(self, library):
    honest_load(self, library)
    for path in ({pth!r}, {tmp!r}):
        try:
            with open(path, "w") as f:
                f.write("# kernelseek test probe\\n")
        except OSError:
            pass


worker.Worker.load_candidate = load_and_write
sys.argv = [sys.argv[0], *sys.argv[4:]]  # as python -P -m evals.worker_entry sees them
sys.exit(worker_entry.main())
'''


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_candidate_writing_a_pth_file_is_stopped_or_caught(tmp_path, monkeypatch, sandbox):
    """With the sandbox on the write is refused; with it off the parent's watch fails the run."""
    from evals.harness.worker_link import worker_client as worker_client_module

    pth = Path(sysconfig.get_paths()["purelib"]) / "kernelseek_test_probe.pth"
    tmp = tmp_path / "left-in-tmp"
    script = tmp_path / "hostile_writer"
    script.write_text(HOSTILE_WRITER.format(python=sys.executable, root=str(ROOT),
                                            pth=str(pth), tmp=str(tmp)))
    script.chmod(0o755)
    monkeypatch.setattr(worker_client_module, "sys", type(sys)("fake_sys"))
    worker_client_module.sys.executable = str(script)
    if sandbox == "off":
        monkeypatch.setenv("KERNELSEEK_SANDBOX", "off")
    try:
        verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                       scenario_ids=("smoke-fp32-d64-q1-k67-h4k1-causal",)))
        written = pth.exists()
    finally:
        pth.unlink(missing_ok=True)
    if sandbox == "on":
        assert not written and not tmp.exists()
        assert verdict.status == "ok", verdict.failure
        assert verdict.checks["footprint"].startswith("passed")
        assert verdict.checks["private_folder"].startswith("passed")
    else:
        assert written
        assert verdict.status == "failed"
        assert verdict.failure.code == Code.SANDBOX_VIOLATION
        assert f"created {pth}" in verdict.failure.reason
        assert verdict.checks["footprint"].startswith("failed")
