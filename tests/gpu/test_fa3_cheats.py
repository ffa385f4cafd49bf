"""The red-team corpus for fa3_hopper on the H200 (``pytest -m gpu``): every cheat is rejected
for its stated reason, every honest kernel passes. Each cheat names its hack and its defence."""

import pytest

from evals.harness import Code, RunSettings, evaluate
from tests.helpers import ROOT, check_held, failures_of

pytestmark = pytest.mark.gpu

CHEATS = ROOT / "tests" / "cheats" / "fa3_hopper"
PREFILL = "smoke-bf16-d128-s512-b2-h8k2-causal"
DECODE = "smoke-bf16-d128-q16-b2-c2048-h32k8-causal"  # appends to the cache
D96 = "smoke-bf16-d96-n3-h4-causal"  # a head dim the dev suite never shows
SCALED = "contract-bf16-d64-q251-k1021-b2-h4-causal-scale0.3"  # softmax_scale 0.3

CASES = [
    # (file, command, scenario, code, text in the reason)
    ("unwritten_output.cu", "check", PREFILL, Code.UNWRITTEN_OUTPUT, "never written"),
    ("zero_output.cu", "check", PREFILL, Code.INACCURATE, "exceeds tolerance"),
    ("partial_output.cu", "check", PREFILL, Code.INACCURATE, "exceeds tolerance"),
    ("return_input.cu", "check", PREFILL, Code.OUTPUT_ALIASED, "input 'q'"),
    ("result_reuse.cu", "check", PREFILL, Code.OUTPUT_ALIASED, "earlier output"),
    ("pointer_cache.cu", "check", PREFILL, Code.STALE_RESULT, "refilled with new data"),
    ("shape_cache.cu", "check", PREFILL, Code.INACCURATE, "exceeds tolerance"),
    ("timed_subset.cu", "bench", PREFILL, Code.STALE_RESULT, "a timed call"),
    # on the H200 the allow-list rejects it before the host-issue cap is reached
    ("host_sync.cu", "bench", PREFILL, Code.FORBIDDEN_SYMBOL, "cudaStreamSynchronize"),
    ("host_roundtrip.cu", "check", PREFILL, Code.TRACE_VIOLATION, "between host and device"),
    ("side_stream_created.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "CUDA stream"),
    # its side stream may still be writing when the parent reads the poison back (seen with 8
    # test workers on one H100), or the trace sees the launch on a stream not the caller's
    # which sees the pool stream first is a race: the trace, an output read before the pool
    # stream wrote it, or an earlier call's buffers read while the pool stream still writes them
    ("side_stream_pooled.cu", "check", PREFILL,
     (Code.TRACE_VIOLATION, Code.UNWRITTEN_OUTPUT, Code.STALE_RESULT),
     ("not the caller's stream", "never written", "refilled")),
    ("per_thread_stream.cu", "check", PREFILL, Code.TRACE_VIOLATION, "not the caller's stream"),
    ("background_thread.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "thread creation"),
    ("deferred_host_callback.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "cudaLaunchHostFunc"),
    ("cuda_graph_replay.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "graph"),
    ("python_timer_patch.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "Python C-API"),
    ("l2_persisting_window.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "L2-persistence"),
    ("cublas_call.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "vendor library"),
    ("cudnn_call.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "vendor library"),
    ("aten_matmul.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "torch compute operator matmul"),
    # on the H200 the allow-list rejects it first (RecordFunction); the trace check stands behind
    ("dispatcher_library_call.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "RecordFunction"),
    ("dlopen_library.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "dynamic loading"),
    ("read_file.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "file I/O"),
    ("getenv.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "environment access"),
    ("input_modification.cu", "check", PREFILL, Code.INPUT_MODIFIED, "input 'q'"),
    ("precision_downgrade.cu", "check", PREFILL, Code.INACCURATE, "exceeds tolerance"),
    ("dev_shape_specialised.cu", "check", D96, Code.INACCURATE, "exceeds tolerance"),
    # the anti-caching probe's repeated call may meet its wrong seventh call first (H200, s10)
    ("racy.cu", "check", PREFILL, (Code.NONDETERMINISTIC, Code.STALE_RESULT),
     ("three runs", "wrong result on the same data")),
    ("hang.cu", "check", PREFILL, Code.TIMEOUT, "no answer"),
    ("crash.cu", "check", PREFILL, Code.EXCEPTION, "CUDA error"),
    # integrity II: allow-lists where deny-lists missed, contract clauses the grid never tested
    ("raw_syscall.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL, "raw system calls"),
    ("composite_op.cu", "check", PREFILL, Code.FORBIDDEN_SYMBOL,
     "outside the target's allow-list: at::compositeimplicitautograd::"),
    ("default_scale.cu", "check", SCALED, Code.INACCURATE, "exceeds tolerance"),
    ("cache_append_skipped.cu", "check", DECODE, Code.INACCURATE,
     "do not hold the appended keys"),
]

# issue 21, the candidate's process as hostile: rejected once the parent verifies a random
# output of every wall-clock batch (until then it passes); write_escape.cu is judged in
# tests/gpu/test_hostile_process_gpu.py, which removes the files it writes
CASES += [
    ("wall_batch_skip.cu", "bench", PREFILL, Code.STALE_RESULT, "wall-clock"),
    # should it miss a batch call and do the work, its forged third no longer explains the
    # parent's clock (alone on the H200 in s10: 589 us a call against 234 reported)
    ("timer_forge.cu", "bench", PREFILL, (Code.STALE_RESULT, Code.TIMING_MISMATCH),
     ("wall-clock", "the parent's clock saw")),
    # issue 40: a forge inside every bound of the ungated wall-clock check (its host issue
    # padded); the trace check or, since fa3_hopper 25, the gated batches catch it first
    ("timer_forge_padded.cu", "bench", PREFILL, (Code.TRACE_VIOLATION, Code.TIMING_MISMATCH),
     ("traced calls, made as timed ones, took", "the parent's clock saw")),
]
JUDGED_ELSEWHERE = {"write_escape.cu", "build_time_plant.cu"}  # test_hostile_process_gpu.py

# integrity III: right on every fixed scenario of the suites, wrong on inputs the contract
# allows (the contract scenarios drawn from the seed: seed 1 draws a negative scale) or stale
# after a few rows of k and v change in place (the probe's partial rewrite, every scenario)
DRAWN_CASES = [
    ("negative_scale.cu", Code.INACCURATE, "exceeds tolerance", True),
    # issue 40: only the covering set's long rows beside a group that is not a power of two
    ("long_odd_group.cu", Code.INACCURATE, "exceeds tolerance", True),
    ("kv_fingerprint_cache.cu", Code.STALE_RESULT,
     "after a few rows of k and v were rewritten in place", False),
]


def test_every_cheat_file_is_covered_and_documented():
    files = {p.name for p in CHEATS.glob("*.cu")} - {"honest_split_kv.cu"}
    expected = ({c[0] for c in CASES} | {c[0] for c in DRAWN_CASES} | {"late_side_stream.cu"}
                | JUDGED_ELSEWHERE)
    assert files == expected and len(files) >= 20
    for name in files:
        head = (CHEATS / name).read_text().splitlines()[:2]
        assert head[0].startswith("// Cheat: ") and head[1].startswith("// Caught by: ")


@pytest.mark.parametrize(("kernel", "command", "scenario", "code", "text"), CASES,
                         ids=[c[0] for c in CASES])
def test_cheat_is_rejected_for_its_reason(kernel, command, scenario, code, text):
    verdict = evaluate(RunSettings(command, "fa3_hopper", CHEATS / kernel, suite="smoke",
                                   scenario_ids=(scenario,), call_timeout_s=15))
    failures = [r.failure for r in verdict.results if r.failure is not None]
    assert verdict.status == "failed" and failures, verdict.to_json()["checks"]
    reasons = zip(code, text, strict=True) if isinstance(code, tuple) else [(code, text)]
    first = failures[0]
    assert any(first.code == c and t in first.reason for c, t in reasons), first


@pytest.mark.parametrize(("kernel", "code", "text", "drawn"), DRAWN_CASES,
                         ids=[c[0] for c in DRAWN_CASES])
def test_whole_contract_cheat_is_rejected_on_what_no_fixed_scenario_tries(kernel, code, text,
                                                                          drawn):
    verdict = evaluate(RunSettings("check", "fa3_hopper", CHEATS / kernel, suite="smoke", seed=1,
                                   call_timeout_s=15))
    failed = [r for r in verdict.results if r.failure is not None]
    assert verdict.status == "failed" and failed, verdict.to_json()["checks"]
    assert failed[0].failure.code == code and text in failed[0].failure.reason, failed[0].failure
    assert failed[0].scenario.drawn == drawn
    if drawn:  # every fixed scenario passes: only the drawn ones catch it
        assert all(r.correct for r in verdict.results if not r.scenario.drawn), failed


def test_late_side_stream_is_rejected_when_timed():
    verdict = evaluate(RunSettings("bench", "fa3_hopper", CHEATS / "late_side_stream.cu",
                                   suite="smoke", scenario_ids=(PREFILL,), call_timeout_s=15))
    failures = [r.failure for r in verdict.results if r.failure is not None]
    # Which check sees it first is a race: the next timed call's fresh q is written while the
    # pool stream may still read the last one (a wrong timed output), else the parent's clock
    # over back-to-back calls ending in a device-wide synchronise sees the work. In a gated
    # wall-clock batch the pool stream runs at once, not behind the gate, and writes outputs into
    # blocks the worker freed to its own (gated, not yet run) stream: the harness's flip indices
    # among them, so the worker's queued gather fails a device-side assert (the candidate's
    # process crashed: an exception).
    caught = {Code.TIMING_MISMATCH, Code.STALE_RESULT, Code.INACCURATE, Code.EXCEPTION}
    assert failures and failures[0].code in caught, verdict.to_json()["scenarios"]


def test_late_side_stream_is_caught_by_the_traced_timed_like_calls_without_timing():
    verdict = evaluate(RunSettings("check", "fa3_hopper", CHEATS / "late_side_stream.cu",
                                   suite="smoke", scenario_ids=(PREFILL,), call_timeout_s=15))
    failures = [r.failure for r in verdict.results if r.failure is not None]
    assert failures and failures[0].code == Code.TRACE_VIOLATION, verdict.to_json()["scenarios"]
    assert "not the caller's stream" in failures[0].reason


def test_a_driver_function_beyond_the_tma_encoders_is_rejected():
    kernel = ROOT / "tests" / "data" / "fa3_hopper" / "driver_launch.cu"
    verdict = evaluate(RunSettings("check", "fa3_hopper", kernel, suite="smoke",
                                   scenario_ids=(PREFILL,)))
    assert verdict.failure is not None and verdict.failure.code == Code.FORBIDDEN_SYMBOL
    assert "cuLaunchKernel" in verdict.failure.reason, verdict.failure


def test_dev_shape_specialised_cheat_passes_the_dev_shapes():
    verdict = evaluate(RunSettings("check", "fa3_hopper", CHEATS / "dev_shape_specialised.cu",
                                   suite="smoke", scenario_ids=(PREFILL,)))
    assert verdict.status == "ok", failures_of(verdict)


@pytest.mark.parametrize("kernel", [ROOT / "kernels" / "fa3_hopper" / "start.cu",
                                    CHEATS / "honest_split_kv.cu",
                                    ROOT / "tests" / "data" / "fa3_hopper" / "faster.cu",
                                    ROOT / "tests" / "data" / "fa3_hopper" / "honest_tma.cu",
                                    ROOT / "tests" / "data" / "fa3_hopper" / "honest_autotune.cu"],
                         ids=lambda p: p.name)
def test_honest_kernels_pass_every_check(kernel):
    verdict = evaluate(RunSettings("bench", "fa3_hopper", kernel, suite="smoke"))
    doc = verdict.to_json()
    assert verdict.status == "ok", failures_of(verdict)
    assert doc["protections"]["seccomp"].startswith("active"), doc["protections"]
    # the memory walls hold on the GPU worker too: no CAP_SYS_PTRACE, the parent sealed
    assert doc["protections"]["ptrace"] in ("dropped", "not held"), doc["protections"]
    assert doc["checks"]["parent_memory"].startswith("sealed"), doc["checks"]
    assert doc["checks"]["symbols"].startswith("passed"), doc["checks"]
    assert doc["checks"]["trace"].startswith("on every scenario")
    for sc in doc["scenarios"]:
        assert sc["checks"]["trace"].startswith("passed"), sc["checks"]
        assert "3 of 3 calls" in sc["checks"]["trace"], sc["checks"]
        assert "traced 0.0 us" not in sc["checks"]["trace"], sc["checks"]  # the sum counts
        expected = {"verification", "anti_caching", "races"}
        if not sc["covering"]:  # a covering row (issue 40) is verified and probed, never timed
            assert check_held(sc, "wall_clock"), sc["checks"]
            expected |= {"timed_outputs", "roofline", "host_issue", "wall_clock"}
        assert expected <= set(sc["checks"]), sc["checks"]
