"""The GPU trace check's judging, on chrome-trace events shaped like torch 2.11's on the H200
(the check itself runs on the GPU corpus under ``pytest -m gpu``)."""

import json
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from evals.harness import Code
from evals.harness.failures import Failure
from evals.harness.judging.judge import Session
from evals.harness.scenarios import Scenario
from evals.harness.tracing import trace
from evals.harness.tracing.trace import (
    CALL_RANGE,
    HARNESS_RANGE,
    MARKER_RANGE,
    base_name,
    judge,
    normalise,
    own_kernels,
    summarise,
)
from evals.harness.tracing.trace_judge import trace_all
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.worker_client import WorkerFailure
from tests.helpers import START_CPU

TID, STREAM = 439, 7
OWN = "void (anonymous namespace)::attention<128, __nv_bfloat16>((anonymous namespace)::Args)"
FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
RANDN = "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
GEMM = "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT"
SAME_BASE = "void flash::attention<128, cutlass::bfloat16_t>(flash::Params)"
SPAN = 1000.0  # each call's slot: harness work, marker, call


def _range(name, ts, dur):
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "pid": TID,
        "tid": TID,
        "ts": ts,
        "dur": dur,
    }


def _events(*calls, extra=(), kernel_us=3.0):
    """A session of calls, each ``[(name, stream, tid, where), ...]``; kernels of ``kernel_us``.

    Call ``i`` occupies ``[i*SPAN, (i+1)*SPAN)``: harness work (a randn) at +100, the marker
    fill at +300, the call range [+400, +800] inside the harness's range of the timer's own
    work [+380, +850] (as ``Tracer.timed_call`` nests them). ``where`` is the launch time:
    "in" (+500), "after" (+900, outside every range) or "harness" (+150). ``extra`` are
    (name, stream, tid, absolute launch time) launches anywhere.
    """
    events, launches = [], []
    for i, kernels in enumerate(calls):
        base = i * SPAN
        events += [
            _range(HARNESS_RANGE, base + 50, 200),
            _range(f"{MARKER_RANGE}#{i}", base + 290, 20),
            _range(HARNESS_RANGE, base + 380, 470),
            _range(f"{CALL_RANGE}#{i}", base + 400, 400),
        ]
        launches += [(RANDN, STREAM, TID, base + 100), (FILL, STREAM, TID, base + 300)]
        offsets = {"in": 500, "after": 900, "harness": 150}
        launches += [(n, s, t, base + offsets[w]) for n, s, t, w in kernels]
    for corr, (name, stream, tid, ts) in enumerate([*launches, *extra]):
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": TID,
                "tid": tid,
                "ts": ts,
                "dur": 5.0,
                "args": {"correlation": corr},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": ts + 50,
                "dur": kernel_us,
                "args": {"stream": stream, "correlation": corr},
            }
        )
    return events


OWN_NAMES = frozenset({normalise(OWN)})


def _judge(*calls, own=OWN_NAMES, extra=()):
    return judge(summarise(_events(*calls, extra=extra), TID), own, len(calls))


GOOD = [(OWN, STREAM, TID, "in"), (FILL, STREAM, TID, "in")]


def test_own_kernels_and_fills_on_the_callers_stream_pass_and_harness_work_is_not_blamed():
    verdicts = _judge(GOOD, GOOD, [(OWN, STREAM, TID, "in"), (GEMM, STREAM, TID, "harness")])
    assert [v[0] for v in verdicts] == [None, None, None]
    assert verdicts[0][1].startswith("passed: 2 kernel(s)")
    assert verdicts[2][1].startswith("passed: 1 kernel(s)")


@pytest.mark.parametrize(
    ("kernel", "text"),
    [
        ((OWN, 13, TID, "in"), "not the caller's stream 7"),
        ((OWN, STREAM, 457828672, "in"), "from another thread"),
        ((OWN, STREAM, 457828672, "after"), "from another thread"),
        ((OWN, STREAM, TID, "after"), "from outside the call"),
        ((GEMM, STREAM, TID, "in"), "not the candidate's own: nvjet"),
        # a library kernel with the candidate's kernel's base name is still the library's
        ((SAME_BASE, STREAM, TID, "in"), "not the candidate's own: void flash::attention"),
    ],
)
def test_side_streams_threads_deferred_launches_and_library_kernels_fail_their_own_call(
    kernel, text
):
    verdicts = _judge(GOOD, [*GOOD, kernel], GOOD)
    assert verdicts[0][0] is None and verdicts[2][0] is None
    failure, finding = verdicts[1]
    assert failure is not None and failure.code == Code.TRACE_VIOLATION and finding == "failed"
    assert text in failure.reason


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("Memcpy HtoD (Pinned -> Device)", False),
        ("Memcpy DtoH (Device -> Pageable)", False),
        ("Memcpy DtoD (Device -> Device)", True),
    ],
)
def test_a_copy_between_host_and_device_inside_a_call_fails_it(name, ok):
    copy = "COPY_MARK"
    events = _events(GOOD, [*GOOD, (copy, STREAM, TID, "in")])
    for e in events:
        if e["name"] == copy:
            e["cat"], e["name"] = "gpu_memcpy", name
    verdicts = judge(summarise(events, TID), OWN_NAMES, 2)
    assert verdicts[0][0] is None
    failure = verdicts[1][0]
    if ok:
        assert failure is None
    else:
        assert failure is not None and "between host and device" in failure.reason


def test_own_kernel_in_the_harness_work_before_a_call_is_deferred_work_of_the_call_before():
    verdicts = _judge(GOOD, GOOD, [*GOOD, (OWN, STREAM, TID, "harness")])
    assert verdicts[0][0] is None and verdicts[2][0] is None
    assert verdicts[1][0] is not None and "from outside the call" in verdicts[1][0].reason


def test_work_from_another_thread_before_the_first_call_is_blamed_on_call_0():
    verdicts = _judge(GOOD, GOOD, extra=[(OWN, STREAM, 99, 10.0)])
    assert verdicts[0][0] is not None and "another thread" in verdicts[0][0].reason
    assert verdicts[1][0] is None


def test_a_call_that_launches_nothing_fails():
    verdicts = _judge(GOOD, [])
    assert verdicts[0][0] is None
    assert verdicts[1][0] is not None and "no GPU kernel" in verdicts[1][0].reason


def test_a_call_whose_marker_kernel_was_dropped_is_reported_as_skipped_not_blamed():
    events = _events(GOOD, GOOD)
    marker_ts = SPAN + 300 + 50  # call 1's marker fill kernel
    events = [e for e in events if not (e.get("cat") == "kernel" and e["ts"] == marker_ts)]
    verdicts = judge(summarise(events, TID), OWN_NAMES, 3)
    assert verdicts[0][0] is None and verdicts[0][1].startswith("passed")
    assert verdicts[1] == (None, "skipped: the profiler recorded no usable trace of this call")
    assert verdicts[2][1].startswith("skipped")  # never traced at all


def test_a_kernel_record_that_lost_its_launch_record_is_blamed_on_no_one():
    events = _events(GOOD, [(OWN, STREAM, TID, "in")])
    lost = next(e for e in reversed(events) if e.get("cat") == "cuda_runtime")
    events.remove(lost)
    verdicts = judge(summarise(events, TID), OWN_NAMES, 2)
    assert verdicts[0][0] is None and verdicts[1][0] is None
    assert "lost their launch record" in verdicts[1][1]


@pytest.mark.parametrize(
    ("name", "base"),
    [
        (OWN, "attention"),
        (
            "(anonymous namespace)::append_kv(char const*, char*, int const*, int, long)",
            "append_kv",
        ),
        ("wild(float*)", "wild"),
        (FILL, "vectorized_elementwise_kernel"),
    ],
)
def test_base_name(name, base):
    assert base_name(name) == base


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_own_kernels_reads_the_nvcc_host_stubs_of_the_object_file(tmp_path, monkeypatch):
    # nvcc's host stub for kernel K is a C++ function named __device_stub__<mangled K>
    src = tmp_path / "stub.cpp"
    src.write_text(
        "namespace { struct Params { int x; }; }\n"
        "void __device_stub__Z4wildPf(float*) {}\n"
        "namespace { void __device_stub__ZN12_GLOBAL__N_19attentionILi64EEEvNS_6ParamsE("
        "Params const&) {} }\n"
        "void use() { Params p{1}; __device_stub__ZN12_GLOBAL__N_19attentionILi64EEEvNS_6ParamsE"
        "(p); }\n"
    )
    subprocess.run(["g++", "-c", str(src), "-o", str(tmp_path / "candidate.cuda.o")], check=True)
    monkeypatch.setattr(trace, "find_cuobjdump", lambda: None)  # the stubs, not the cubin
    assert own_kernels(tmp_path / "ks_x.so") == {
        "wild(float*)",  # no return type: __cxa_demangle spells it as the profiler does
        "void(anonymousnamespace)::attention<64>((anonymousnamespace)::Params)",
    }


class _Client:
    """Stands in for the worker: answers the one trace request with ``answer``."""

    def __init__(self, answer, summary=None):
        self.answer, self.requests, self.killed = answer, [], False
        self.payload = json.dumps(summary).encode() if summary is not None else b""

    def request(self, header, timeout_s=None):
        self.requests.append((header, timeout_s))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer, self.payload

    def kill(self):
        self.killed = True


def _session(answer, n=3, summary=None):
    target = SimpleNamespace(
        limits=SimpleNamespace(call_timeout_s=120.0),
        inputs_per_scenario=3,
        timing=SimpleNamespace(fresh_queries=True, spin_min_us=50.0),
    )
    session = Session(target, _Client(answer, summary), seed=7, command="bench")
    session.own_kernels = OWN_NAMES
    results = [ScenarioResult(Scenario(id=f"s{i}"), correct=True) for i in range(n)]
    return session, results


def test_trace_all_sends_the_correct_scenarios_in_one_request_and_fails_the_violators():
    summary = summarise(_events(GOOD, [(GEMM, STREAM, TID, "in")]), TID)
    answer = {"ok": True, "traced": True, "stopped": None}  # the summary is the payload
    session, results = _session(answer, n=3, summary=summary)
    results[1].correct = False  # already failed: not traced
    trace_all(session, results, calls=1)
    ((header, timeout),) = session.client.requests
    assert [item["scenario"]["id"] for item in header["items"]] == ["s0", "s2"]
    assert timeout > 120.0
    assert results[0].correct and results[0].checks["trace"].startswith("passed")
    assert not results[2].correct and results[2].failure.code == Code.TRACE_VIOLATION
    assert "trace" not in results[1].checks


def test_trace_all_blames_a_candidate_error_on_its_call_and_skips_the_rest():
    failure = {"code": "exception", "reason": "candidate raised RuntimeError: CUDA error"}
    answer = {
        "ok": True,
        "traced": False,
        "error": "RuntimeError(...)",
        "restart": True,
        "stopped": {"index": 1, "failure": failure, "restart": True},
    }
    session, results = _session(answer)
    trace_all(session, results, calls=1)
    assert session.client.killed
    assert results[0].correct and results[0].checks["trace"].startswith("skipped: the profiler")
    assert not results[1].correct and results[1].failure.code == Code.EXCEPTION
    assert results[2].correct and "earlier scenario" in results[2].checks["trace"]


def test_an_unreadable_summary_skips_the_check_instead_of_crashing_the_run():
    session, results = _session({"ok": True, "traced": True, "stopped": None}, n=2)
    session.client.payload = b"{not json"
    trace_all(session, results, calls=1)
    assert all(r.correct and r.checks["trace"].startswith("skipped") for r in results)


def test_trace_all_fails_every_traced_scenario_when_the_worker_hangs_under_the_profiler():
    hang = WorkerFailure(Failure(Code.TIMEOUT, "no answer within 120 s (trace): hang"))
    session, results = _session(hang)
    trace_all(session, results, calls=1)
    assert all(not r.correct and r.failure.code == Code.TIMEOUT for r in results)
    assert all(r.checks["trace"].startswith("failed: no answer") for r in results)


def test_a_scenario_failed_by_the_trace_is_reported_again_in_the_progress(monkeypatch):
    from evals.harness.judging import judge_suite
    from evals.harness.pipeline import runner

    def fail_first(session, results):
        results[0].correct = False
        results[0].failure = Failure(Code.TRACE_VIOLATION, "launched a foreign kernel")

    monkeypatch.setattr(judge_suite, "trace_all", fail_first)
    lines = []
    settings = runner.RunSettings("check", "cpu_attention", START_CPU, suite="smoke", seed=1)
    verdict = runner.evaluate(settings, progress=lambda *args: lines.append(args))
    assert verdict.status == "failed" and len(lines) == len(verdict.results) + 1
    done, total, result = lines[-1]
    assert (done, total) == (1, len(verdict.results))
    assert result.failure.code == Code.TRACE_VIOLATION


def _timed(results, median_us):
    from evals.harness.measurement.timing import summarize

    for r in results:
        r.times = {"candidate": summarize([median_us] * 5)}
        r.timing = {"spin_us": {"candidate": 80.0}}


def test_each_scenario_gets_timed_like_calls_on_its_timing_seeds_and_all_must_pass():
    # 2 scenarios x 3 calls; scenario 1's second call launches a library GEMM
    calls = [GOOD, GOOD, GOOD, GOOD, [(GEMM, STREAM, TID, "in")], GOOD]
    summary = summarise(_events(*calls, kernel_us=4.5), TID)  # 2 kernels a call: 9 us
    answer = {"ok": True, "traced": True, "stopped": None}
    session, results = _session(answer, n=2, summary=summary)
    _timed(results, 10.0)
    trace_all(session, results, calls=3)
    ((header, _),) = session.client.requests
    assert header["calls"] == 3
    item = header["items"][0]
    from evals.harness.worker_link.session import timing_seeds

    assert item["seeds"] == timing_seeds(session, results[0].scenario, 0)  # the timed sets
    assert item["spin_us"] == 80.0 and item["fresh_queries"] is True
    assert results[0].correct and "3 of 3 calls" in results[0].checks["trace"]
    assert "traced 9.0 us" in results[0].checks["trace"]
    assert not results[1].correct and results[1].failure.code == Code.TRACE_VIOLATION


@pytest.mark.parametrize(("kernel_us", "passes"), [(67.0, True), (68.0, False), (200.0, False)])
def test_traced_calls_slower_than_the_timed_median_allows_fail_the_scenario(kernel_us, passes):
    # two kernels a call; timed 100 us, so the limit is 1.25 x 100 + 10 = 135 us: a timer
    # forged to report 0.55x of each call (182 us of work timed at 100) fails here
    summary = summarise(_events(GOOD, GOOD, GOOD, kernel_us=kernel_us), TID)
    answer = {"ok": True, "traced": True, "stopped": None}
    session, results = _session(answer, n=1, summary=summary)
    _timed(results, 100.0)
    trace_all(session, results, calls=3)
    assert results[0].correct == passes, results[0].checks
    if not passes:
        assert results[0].failure.code == Code.TRACE_VIOLATION
        traced = f"took {2 * kernel_us:.1f} us"
        assert traced in results[0].failure.reason and "100.0 us" in results[0].failure.reason


def test_a_stop_on_a_later_call_of_a_scenario_is_blamed_on_that_scenario():
    failure = {"code": "exception", "reason": "candidate raised RuntimeError: CUDA error"}
    stopped = {"index": 4, "failure": failure, "restart": True}  # scenario 1, call 1
    answer = {"ok": True, "traced": False, "error": "x", "restart": True, "stopped": stopped}
    session, results = _session(answer, n=3)
    trace_all(session, results, calls=3)
    assert not results[1].correct and results[1].failure.code == Code.EXCEPTION
    assert "earlier scenario" in results[2].checks["trace"]


def test_a_traced_calls_time_is_its_gpu_work_not_the_host_time_around_it():
    # each call's range spans 400 us of host time; its two kernels run 3 us each
    summary = summarise(_events(GOOD, GOOD, GOOD), TID)
    session, results = _session({"ok": True, "traced": True, "stopped": None}, n=1, summary=summary)
    _timed(results, 7.5)
    trace_all(session, results, calls=3)
    assert results[0].correct and "traced 6.0 us" in results[0].checks["trace"]
