"""The red-team corpus for cpu_attention: every cheat is rejected for its stated reason, every
honest kernel passes. Each cheat file names its hack and the defence that must catch it."""

import re

import pytest

from evals.harness import Code, RunSettings, evaluate, get_target
from evals.harness.verdict.record import geomean
from tests.helpers import CPU_KERNELS, ROOT, START_CPU, check_held, failures_of

CHEATS = ROOT / "tests" / "cheats" / "cpu_attention"

CASES = [
    # (file, command, suite, code, text in the reason)
    ("return_input.cpp", "check", "smoke", Code.OUTPUT_ALIASED, "input 'v'"),
    ("result_reuse.cpp", "check", "smoke", Code.OUTPUT_ALIASED, "earlier output"),
    ("pointer_cache.cpp", "check", "smoke", Code.STALE_RESULT, "refilled with new data"),
    ("shape_cache.cpp", "check", "smoke", Code.INACCURATE, "exceeds tolerance"),
    ("timed_subset.cpp", "bench", "smoke", Code.STALE_RESULT, "a timed call"),
    ("input_modification.cpp", "check", "smoke", Code.INPUT_MODIFIED, "input 'q'"),
    ("precision_downgrade.cpp", "check", "smoke", Code.INACCURATE, "exceeds tolerance"),
    ("shape_specialised.cpp", "check", "dev", Code.INACCURATE, "exceeds tolerance"),
    ("racy.cpp", "check", "smoke", Code.NONDETERMINISTIC, "three runs"),
    ("background_thread.cpp", "check", "smoke", Code.FORBIDDEN_INCLUDE, "<thread>"),
    ("extension_header.cpp", "check", "smoke", Code.FORBIDDEN_INCLUDE, "torch/extension.h"),
    ("thread_via_torch_headers.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "thread creation"),
    ("getenv.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "environment access"),
    ("read_file.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "file I/O"),
    ("dlopen_library.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "dynamic loading"),
    # integrity IV: a harness_error forged onto the channel is the candidate's, never an
    # error left out of the statistics (tests/test_build_confinement.py: the scorer's view)
    ("forged_harness_error.cpp", "check", "smoke", Code.EXCEPTION, "a code only the harness"),
    ("python_timer_patch.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "Python C-API"),
    ("torch_op.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "torch compute operator"),
    ("dispatcher_op.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "through the dispatcher"),
    # integrity II (A): allow-lists where deny-lists missed ways in
    ("composite_op.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL,
     "outside the target's allow-list: at::compositeimplicitautograd::"),
    ("thread_via_at_launch.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL,
     "outside the target's allow-list: at::launch"),
    ("raw_syscall.cpp", "check", "smoke", Code.FORBIDDEN_SYMBOL, "raw system calls"),
    ("include_by_macro.cpp", "check", "smoke", Code.FORBIDDEN_INCLUDE,
     "<fstream> (the preprocessor's list)"),
    # integrity II (C): contract clauses the suites never tested
    ("top_left_causal.cpp", "check", "smoke", Code.INACCURATE, "exceeds tolerance"),
    ("default_scale.cpp", "check", "smoke", Code.INACCURATE, "exceeds tolerance"),
    ("tile_tail_dropped.cpp", "check", "smoke", Code.INACCURATE, "exceeds tolerance"),
    ("no_max_subtraction.cpp", "check", "smoke", Code.NAN_INF, "NaN or Inf"),
    # the OS sandbox: libc reached with no symbol the static checks see
    ("libc_by_address.cpp", "check", "smoke", Code.SANDBOX_VIOLATION,
     "the candidate made a system call the sandbox forbids (killed by SIGSYS) while run"),
]


# integrity III: right on every fixed scenario of the suites, wrong on inputs the contract
# allows (the contract scenarios drawn from the seed; seed 1 draws each class) or stale after a
# few rows of k and v change in place (the probe's partial rewrite, on every scenario)
DRAWN_CASES = [
    ("negative_scale.cpp", Code.INACCURATE, "exceeds tolerance", True),
    ("no_key_rows.cpp", Code.INACCURATE, "exceeds tolerance", True),
    ("pow2_group.cpp", Code.INACCURATE, "exceeds tolerance", True),
    ("half_storage.cpp", Code.NAN_INF, "NaN or Inf", True),
    ("kv_fingerprint_cache.cpp", Code.STALE_RESULT,
     "after a few rows of k and v were rewritten in place", False),
    # issue 40: an edge class only the covering set is sure to reach (tests/test_contract_cover)
    ("decode_d128_half.cpp", Code.INACCURATE, "exceeds tolerance", True),
    ("odd_batch_pairs.cpp", Code.INACCURATE, "exceeds tolerance", True),
    ("long_keys_truncated.cpp", Code.INACCURATE, "exceeds tolerance", True),
]


# results that are right, with a gain only if the harness let the same inputs come back
NEUTRALISED = {"content_cache.cpp"}

# issue 21, the candidate's process as hostile (classes 1 and 2): judged in
# tests/test_hostile_process.py, where their rejection waits (xfail) for parent-verified
# wall-clock batches and write confinement
NEUTRALISED |= {"timer_forge.cpp", "wall_batch_skip.cpp", "write_escape.cpp"}
# the candidate's process holding the device lock folder's locks: tests/test_lock_tamper.py
NEUTRALISED |= {"lock_squat.cpp"}
# integrity IV, a plant that needs its library loaded outside the worker:
# tests/test_build_confinement.py
NEUTRALISED |= {"build_time_plant.cpp"}
# a process forked at load to outlive its run and rewrite the verdict: scored in the scorer
# container, tests/test_docker_hostile.py (pytest -m docker)
NEUTRALISED |= {"outliving_fork.cpp"}
# reads its parent's memory (the secret seed) through /proc: refused, so it learns nothing;
# tests/test_memory_walls.py reads its log
NEUTRALISED |= {"parent_memory.cpp"}


def test_every_cheat_file_is_covered_and_documented():
    files = {p.name for p in CHEATS.glob("*.cpp")} - {"honest_split_kv.cpp"}
    assert files == {c[0] for c in CASES} | {c[0] for c in DRAWN_CASES} | NEUTRALISED
    for name in files:
        head = (CHEATS / name).read_text().splitlines()[:2]
        assert head[0].startswith("// Cheat: ") and head[1].startswith("// Caught by: ")


@pytest.mark.parametrize(("kernel", "command", "suite", "code", "text"), CASES,
                         ids=[c[0] for c in CASES])
def test_cheat_is_rejected_for_its_reason(kernel, command, suite, code, text):
    verdict = evaluate(RunSettings(command, "cpu_attention", CHEATS / kernel, suite=suite))
    assert verdict.status == "failed"
    failures = [r.failure for r in verdict.results if r.failure is not None]
    # the first scenario that fails, fails for the cheat's reason (a cheat that stops working
    # after some calls, like timed_subset, may fail later scenarios for other reasons)
    assert failures and failures[0].code == code, failures
    assert text in failures[0].reason


@pytest.mark.long  # a bench of two kernels, half a minute quiet (over a minute beside hogs)
def test_content_cache_gains_nothing_because_no_timed_call_repeats_its_inputs():
    # with 3 fixed input sets rotated through the timed calls, this cheat measured 9.1x SDPA on
    # the smoke suite with every check passed (plain compute: 0.04x, about 200x less); a fresh
    # q per timed call makes every lookup miss. Judged against the plain kernel it wraps,
    # measured in the same run (a loaded machine moves both alike), never an absolute figure.
    # one seed for both: the same drawn contract scenarios, compared one by one
    cheat = evaluate(RunSettings("bench", "cpu_attention", CHEATS / "content_cache.cpp",
                                 suite="smoke", seed=5))
    plain = evaluate(RunSettings("bench", "cpu_attention", START_CPU, suite="smoke", seed=5))
    assert cheat.status == "ok" and plain.status == "ok"
    for r in cheat.results:  # covering rows are verified, never timed
        fresh = "a fresh q before every timed call"
        assert r.scenario.covering or fresh in r.checks["timed_outputs"]
    per_scenario = [
        c.times["candidate"].median_us / p.times["candidate"].median_us
        for c, p in zip(cheat.results, plain.results, strict=True)
        if not c.scenario.covering
    ]
    # its own time against the plain kernel's (SDPA's multi-threaded time collapses under load,
    # so a ratio over SDPA is no baseline); a hit on every timed call would be about 200x less
    assert geomean(per_scenario) > 1 / 3 and min(per_scenario) > 1 / 10, per_scenario


def test_shape_specialised_cheat_passes_the_shapes_it_was_shown():
    # the smoke suite's own scenarios (named: no contract scenarios are drawn beside them)
    shown = tuple(s.id for s in get_target("cpu_attention").load_suite("smoke").scenarios)
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / "shape_specialised.cpp",
                                   suite="smoke", scenario_ids=shown))
    assert verdict.status == "ok"


def _honest_kernels():
    """The honest CPU kernels of the corpora, from the list the load proof also reads."""
    lines = (CPU_KERNELS / "honest.txt").read_text().splitlines()
    return [ROOT / line for line in lines if line and not line.startswith("#")]


DEFAULT_TIER_HONEST = {"start.cpp", "honest_split_kv.cpp"}
"""Honest kernels benched in the default tier; the rest (three quarters of a minute each beside
load) in the long tier, which CI runs after it."""


@pytest.mark.parametrize("kernel", [
    pytest.param(k, id=k.name, marks=() if k.name in DEFAULT_TIER_HONEST else pytest.mark.long)
    for k in _honest_kernels()
])  # fmt: skip
def test_honest_kernels_pass_every_check(kernel):
    verdict = evaluate(RunSettings("bench", "cpu_attention", kernel, suite="smoke"))
    assert verdict.status == "ok", failures_of(verdict)
    doc = verdict.to_json()
    assert doc["checks"]["includes"] == "passed"
    symbols = doc["checks"]["symbols"]
    assert symbols.startswith("passed: ") and "candidate.o" in symbols
    assert doc["checks"]["trace"].startswith("skipped: CPU target")
    for sc in doc["scenarios"]:  # every defence that ran on a scenario says what it found
        # a re-timed scenario (class 4) says so too: its fresh process's clock check; a tiny
        # drawn scenario can beat SDPA's fixed cost by 1.5x: then the strict re-run too
        retimed = {"retime_wall_clock", "strict_wall_clock", "strict_rerun"}
        checked = {"verification", "anti_caching", "races"}
        timed = {"timed_outputs", "round_audit", "wall_clock", "roofline"}
        # a covering row is verified and probed, never timed
        expected = checked if sc["covering"] else checked | timed
        assert set(sc["checks"]) - retimed == expected
        assert all(check_held(sc, name) for name in sc["checks"]), sc["checks"]


def test_the_honest_list_names_every_honest_cpu_kernel_of_the_corpora():
    # scripts/honest_under_load.sh proves the kernels of this list under load: none left out
    listed = _honest_kernels()
    assert all(path.is_file() for path in listed), listed
    corpora = {*CPU_KERNELS.glob("honest_*.cpp"), *CHEATS.glob("honest_*.cpp")}
    assert corpora <= set(listed) and {START_CPU, CPU_KERNELS / "fast.cpp"} <= set(listed)


def test_dispatcher_cheat_is_real_attention_that_only_the_symbol_rules_catch(monkeypatch):
    import evals.targets.cpu_attention.target as cpu

    monkeypatch.setattr(cpu, "DISPATCHER_SYMBOLS", ())  # the deny rule off: the allow-list
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / "dispatcher_op.cpp",
                                   suite="smoke"))
    assert verdict.failure is not None and verdict.failure.code == Code.FORBIDDEN_SYMBOL
    assert "outside the target's allow-list" in verdict.failure.reason  # the call inlines
    monkeypatch.setattr(cpu, "OPENMP_ALLOWED_SYMBOLS", (r".*",))  # and the allow-list off
    # the suite's own scenarios: SDPA itself returns NaN on some covering rows (causal, large
    # magnitudes; long ones too since the covering set's long class), as the composite op's
    shown = tuple(s.id for s in get_target("cpu_attention").load_suite("smoke").scenarios)
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / "dispatcher_op.cpp",
                                   suite="smoke", scenario_ids=shown))
    assert verdict.status == "ok", failures_of(verdict)


def test_composite_op_cheat_is_real_attention_that_only_the_allow_list_catches(monkeypatch):
    # a deny-list naming at::_ops and the dispatcher let this through: it is torch's SDPA
    import evals.targets.cpu_attention.target as cpu

    monkeypatch.setattr(cpu, "OPENMP_ALLOWED_SYMBOLS", (r".*",))
    # the suite's own scenarios: SDPA itself returns NaN on some covering rows (causal, large
    # magnitudes), which says nothing about the allow-list
    shown = tuple(s.id for s in get_target("cpu_attention").load_suite("smoke").scenarios)
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / "composite_op.cpp",
                                   suite="smoke", scenario_ids=shown))
    assert verdict.status == "ok", failures_of(verdict)


@pytest.mark.parametrize("kernel", ["top_left_causal.cpp", "default_scale.cpp",
                                    "tile_tail_dropped.cpp", "no_max_subtraction.cpp"])
def test_contract_clause_cheats_pass_the_scenarios_they_are_right_on(kernel):
    # each is right on every scenario the suites held before integrity II: only the new
    # scenarios (the last three of smoke) catch it
    target = get_target("cpu_attention")
    old = [s.id for s in target.load_suite("smoke").scenarios[:2]]
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / kernel, suite="smoke",
                                   scenario_ids=tuple(old)))
    assert verdict.status == "ok", failures_of(verdict)


def test_libc_by_address_cheat_passes_every_static_check_and_opens_a_socket(tmp_path, monkeypatch):
    # what only the sandbox catches: with it off, the cheat is correct attention that passes
    # every check, and its socket() call succeeds (the worker's log shows the descriptor)
    monkeypatch.setenv("KERNELSEEK_SANDBOX", "off")
    log = tmp_path / "worker.log"
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / "libc_by_address.cpp",
                                   suite="smoke", keep_worker_log=log))
    assert verdict.status == "ok", failures_of(verdict)
    assert verdict.checks["symbols"].startswith("passed: ")
    assert verdict.protections is not None
    assert verdict.protections["seccomp"] == "off: KERNELSEEK_SANDBOX=off"
    assert "the candidate ran without the OS sandbox" in " ".join(verdict.flags)
    opened = re.findall(r"kernelseek-cheat: socket\(\) = (-?\d+)", log.read_text())
    assert opened and int(opened[0]) >= 0, log.read_text()[-2000:]


@pytest.mark.parametrize(("kernel", "code", "text", "drawn"), DRAWN_CASES,
                         ids=[c[0] for c in DRAWN_CASES])
def test_whole_contract_cheat_is_rejected_on_what_no_fixed_scenario_tries(kernel, code, text,
                                                                          drawn):
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEATS / kernel, suite="smoke",
                                   seed=1))
    assert verdict.status == "failed"
    failed = [r for r in verdict.results if r.failure is not None]
    assert failed and failed[0].failure.code == code, [r.failure for r in failed]
    assert text in failed[0].failure.reason
    assert failed[0].scenario.drawn == drawn  # the class a fixed scenario never showed
    if drawn:  # every fixed scenario passes: only the drawn ones catch it
        fixed = get_target("cpu_attention").load_suite("smoke").ids
        assert all(r.correct for r in verdict.results if r.scenario.id in fixed), [
            r.failure for r in verdict.results if r.scenario.id in fixed]
