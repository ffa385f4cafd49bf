"""Issue 21, classes 1 and 2 on cpu_attention: the candidate's process treated as hostile.

Each kernel here passes every static check (libc reached by address, no symbol to show for it)
and computes correct attention on every call the harness verifies. ``timer_forge.cpp``
rewrites libpython's GOT slot of ``clock_gettime`` so the worker's timer runs at a sixth of
the pace during a call, and skips the work in the parent's back-to-back wall-clock calls;
``wall_batch_skip.cpp`` only skips; ``write_escape.cpp`` writes a ``.pth`` file into the
running torch's site-packages, a file into the build cache and one into ``/tmp``. The parent
verifies a random call of every wall-clock batch against its committed digest and the
reference, and fails a run whose candidate's process changed places that outlive it.
"""

import re
from fractions import Fraction
from pathlib import Path

import pytest

from benchmarks.cpu_forge_gain import ratio, variants
from evals.harness import Code, RunSettings, evaluate
from evals.harness.clock_checks import wall_verify
from evals.harness.verdict.record import Verdict
from tests.helpers import BUILD_CACHE, ROOT

CHEATS = ROOT / "tests" / "cheats" / "cpu_attention"
WROTE = re.compile(r"kernelseek-cheat: wrote (\S+): fd (-?\d+), (-?\d+) bytes")


def _failures(verdict: Verdict) -> list:
    """The run's own failure (if any) first, then each failed scenario's."""
    found = [verdict.failure] if verdict.failure is not None else []
    return found + [r.failure for r in verdict.results if r.failure is not None]


def test_timer_forge_passes_every_static_check_and_patches_the_worker_clock(tmp_path, monkeypatch):
    # with the OS sandbox on, nothing stops it from rewriting the worker's own clock: the GOT
    # slot is process memory (mprotect is allowed). Every call it does not skip is right. The
    # probe's back-to-back calls give it a chance to skip when the host is quick enough; a
    # skip that hands back another input's output there must fail the run, and nothing else may
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    log = tmp_path / "worker.log"
    verdict = evaluate(
        RunSettings(
            "check", "cpu_attention", CHEATS / "timer_forge.cpp", suite="smoke", keep_worker_log=log
        )
    )
    assert verdict.checks["symbols"].startswith("passed: ")
    assert verdict.protections is not None
    assert str(verdict.protections["seccomp"]).startswith("active: ")
    text = log.read_text()
    patched = re.findall(r"clock_gettime GOT slots patched = (\d+)", text)
    assert patched and int(patched[0]) >= 1, text[-2000:]
    if verdict.status == "ok":
        return
    failures = _failures(verdict)
    assert "skipped a back-to-back call" in text, failures
    assert failures and failures[0].code == Code.STALE_RESULT, failures
    assert "on the same data in new buffers" in failures[0].reason, failures[0]


def test_timer_forge_is_rejected_when_the_parent_verifies_wall_batches(monkeypatch):
    # before integrity III: accepted, 2.2x the same kernel's (fast.cpp's) geomean on smoke.
    # Now every back-to-back call must do work the parent verifies (a skipped call fetched
    # for checking: stale_result), and batches that did their work take the true time, which
    # the forged sixth of it no longer explains (timing_mismatch): either way the wall-clock
    # check rejects it. At a third (its pace until session 17) it sat at the CPU check's 2.5x
    # tolerance and was accepted in about half the runs (once in CI): a forge within that
    # tolerance is THREATS.md's known limit, so the test holds the harness to what it claims
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    verdict = evaluate(
        RunSettings("bench", "cpu_attention", CHEATS / "timer_forge.cpp", suite="smoke")
    )
    failures = _failures(verdict)
    assert verdict.status == "failed" and failures
    first = failures[0]
    # a skipped call in the probe's or a batch's back-to-back calls, or the batches' true time
    assert first.code == Code.STALE_RESULT or (
        first.code == Code.TIMING_MISMATCH and "the parent's clock saw" in first.reason
    ), first


def test_a_forged_clock_inside_the_wall_clock_checks_tolerance_fails_the_round_audit(
    tmp_path, monkeypatch
):
    # the same forge at a third of the pace: inside the wall-clock check's 2.5x it was accepted
    # in about half the runs; the parent's clock on its timing rounds, less the same rounds
    # with no kernel, holds its reports to 1.25x (evals/harness/clock_checks/round_audit.py).
    # On a loaded host the wall-clock check may see it first (435 us a call against 128 us
    # reported, allowed 402 us, beside the long tier): either check rejects it; the audit's own
    # bounds are tested in tests/test_round_audit.py
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    source = (CHEATS / "timer_forge.cpp").read_text()
    assert source.count("* 5 / 6") == 2 and source.count("kBackToBackNs = 12000") == 1
    kernel = tmp_path / "timer_forge_third.cpp"
    # the clock alone: no call skipped, so no check of outputs can stop it before the audit
    forge_only = source.replace("kBackToBackNs = 12000", "kBackToBackNs = 0")
    kernel.write_text(forge_only.replace("* 5 / 6", "* 2 / 3"))
    # a second run where the first passed: one CI run in many, beside a loaded host, had each
    # scenario pass one of its rounds (the null round also lengthened by load: the forge hides in
    # a quarter of it), status ok; that forge gains nothing, since the parent's figure is scored
    # (the long tier's test_a_forged_clock_within_every_bound_gains_nothing_on_the_cpu)
    for _ in range(2):
        verdict = evaluate(RunSettings("bench", "cpu_attention", kernel, suite="smoke"))
        if verdict.status == "failed":
            break
    failures = _failures(verdict)
    assert verdict.status == "failed" and failures
    first = failures[0]
    assert first.code == Code.TIMING_MISMATCH, first
    assert "a timing round of" in first.reason or "the parent's clock saw" in first.reason, first


# opt-in (`-m slow`): up to 16 bench runs. Whether the cheat gets a call to skip depends on
# the host's pace (it skips a call entered within 12 us of the last return)
@pytest.mark.slow
def test_wall_batch_skip_is_rejected_wherever_it_skips(tmp_path, monkeypatch):
    # honest timed calls: only a check of outputs made back to back can see the skipped work.
    # The probe's calls after its in-place rewrite run back to back (caught there in 6 of 6
    # check runs here, 0 of 6 before they did); the wall-clock check verifies one random call
    # of each batch, so a run whose skips all fall in unverified batch calls escapes
    # (THREATS.md's known limit): every batch is verified here, and up to 16 runs are made
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    monkeypatch.setattr(wall_verify, "LATER_SHARE", 1.0)
    engaged = 0
    for attempt in range(16):
        log = tmp_path / f"worker{attempt}.log"
        verdict = evaluate(
            RunSettings("bench", "cpu_attention", CHEATS / "wall_batch_skip.cpp",
                        suite="smoke", keep_worker_log=log)
        )  # fmt: skip
        if "skipped a back-to-back call" not in log.read_text():
            continue  # a busy host gave it no call to skip: it did every call's work
        engaged += 1
        failures = _failures(verdict)
        if verdict.status == "failed":
            assert failures[0].code == Code.STALE_RESULT, failures[0]
            reason = failures[0].reason
            assert "wall-clock" in reason or "on the same data in new buffers" in reason, reason
            return
    if not engaged:
        pytest.skip("the cheat never engaged: no back-to-back call on this busy host")
    pytest.fail(f"the cheat skipped calls in {engaged} runs and escaped every check")


def _escape_targets() -> list[Path]:
    """Where write_escape.cpp aims, as it finds them: torch's site-packages and the cache."""
    import torch

    site = Path(torch.__file__).resolve().parent.parent
    return [
        site / "kernelseek_escape_probe.pth",
        BUILD_CACHE / "builds" / "kernelseek_escape_probe",
    ]


def _written(log: Path) -> list[tuple[Path, int]]:
    """The paths the cheat tried (from the worker's log) with the descriptor it got."""
    return [(Path(path), int(fd)) for path, fd, _ in WROTE.findall(log.read_text())]


def _remove(paths: list[Path]) -> None:
    for path in [*paths, *Path("/tmp").glob("kernelseek-escape-*")]:
        path.unlink(missing_ok=True)


def test_write_escape_leaves_no_file_with_the_sandbox_on(tmp_path, monkeypatch):
    # on the CPU the seccomp filter makes files read-only: every writing open fails (EPERM)
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    log = tmp_path / "worker.log"
    tried: list[tuple[Path, int]] = []
    try:
        evaluate(
            RunSettings(
                "check",
                "cpu_attention",
                CHEATS / "write_escape.cpp",
                suite="smoke",
                keep_worker_log=log,
            )
        )
        tried = _written(log)
        paths = {p for p, _ in tried}
        assert set(_escape_targets()) <= paths, log.read_text()[-2000:]
        assert any(str(p).startswith("/tmp/kernelseek-escape-") for p in paths)
        assert all(fd < 0 for _, fd in tried), tried
        assert not [p for p in paths if p.exists()]
    finally:
        _remove([p for p, _ in tried] + _escape_targets())


def test_write_escape_is_a_sandbox_violation_where_files_are_writable(tmp_path, monkeypatch):
    # with the seccomp filter off (as files are writable on the GPU) the writes land; the
    # parent must find what the candidate's process changed and fail the run
    monkeypatch.setenv("KERNELSEEK_SANDBOX", "off")
    log = tmp_path / "worker.log"
    tried: list[tuple[Path, int]] = []
    try:
        verdict = evaluate(
            RunSettings(
                "check",
                "cpu_attention",
                CHEATS / "write_escape.cpp",
                suite="smoke",
                keep_worker_log=log,
            )
        )
        tried = _written(log)
        failures = _failures(verdict)
        assert verdict.status == "failed" and failures
        assert failures[0].code == Code.SANDBOX_VIOLATION, failures[0]
        reason = failures[0].reason
        assert "changed" in reason and "kernelseek_escape_probe.pth" in reason
    finally:
        _remove([p for p, _ in tried] + _escape_targets())


GAIN_BOUND = 1.15
"""What the forge may read faster than its twin, by each scenario's best figure over the runs."""


@pytest.mark.long
def test_a_forged_clock_within_every_bound_gains_nothing_on_the_cpu(tmp_path, monkeypatch):
    # issue 40: a clock forged no further than the round audit scales and the wall-clock check
    # allows (before: 1.38x and 1.87x its honest twin, exit 0). The worker's figures still show
    # the forge; every speedup's time is the parent's (evals/harness/clock_checks/parent_figure.py),
    # for the upstream too, so the forged kernel's times match its twin's, scored on the same seed.
    # Both are benched in turn and each scenario's best time counts; a run beside load is far
    # off its truth, and only ever slower (noise only adds time), so while the forge reads
    # ahead, two more runs each: one core kept busy, one run of the twin read 0.51-1.05x
    # another, the forge 1.15x behind by the best of its runs (results/measurements/cpu/
    # 2026-12-07-s44-forge/); the forge once read 1.18x ahead by the best of two, in CI
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    forged, twin = variants(tmp_path, Fraction(5, 7))  # benchmarks/cpu_forge_gain.py
    runs: list[Verdict] = []
    for _ in range(3):
        runs += _forge_and_twin(forged, twin)
        if any(v.status == "failed" for v in runs[::2]):  # a busy host can push it over a bound
            first = _failures(next(v for v in runs[::2] if v.status == "failed"))[0]
            assert first.code == Code.TIMING_MISMATCH, first
            return
        timed = [r for v in runs for r in v.results if "candidate" in r.times]
        assert timed and all(r.timing["figure"] == "parent" for r in timed)
        figure, _ = ratio(runs[::2], runs[1::2], of="figure")
        if figure > 1 / GAIN_BOUND:
            break
    worker, shared = ratio(runs[::2], runs[1::2], of="worker")
    assert shared >= 5
    assert worker < 0.9, f"the forge did not take: the worker's own figures at {worker:.2f}x"
    assert figure > 1 / GAIN_BOUND, (
        f"a forged clock gained {1 / figure:.2f}x over {len(runs) // 2} runs each "
        f"(worker: {1 / worker:.2f}x)"
    )


def _forge_and_twin(forged: Path, twin: Path) -> list[Verdict]:
    """Each kernel benched twice on seed 11, in turn: forged, twin, forged, twin."""
    runs = [
        evaluate(RunSettings("bench", "cpu_attention", kernel, suite="smoke", seed=11))
        for kernel in (forged, twin, forged, twin)
    ]
    for verdict in runs[1::2]:
        assert verdict.status == "ok", _failures(verdict)
    return runs
