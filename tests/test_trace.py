"""The GPU trace check's judging, on chrome-trace events shaped like torch 2.11's on the H200
(the check itself runs on the GPU corpus under ``pytest -m gpu``)."""

import shutil
import subprocess

import pytest

from evals.harness import Code
from evals.harness.trace import CALL_RANGE, base_name, judge, own_kernels, summarise

TID, STREAM = 439, 7
OWN = "void (anonymous namespace)::attention<128, __nv_bfloat16>((anonymous namespace)::Args)"
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
GEMM = "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT"


def _events(*kernels):
    """A trace: the marker fill before the call range, then (name, stream, tid, in_call) each."""
    events = [{"ph": "X", "cat": "user_annotation", "name": CALL_RANGE, "pid": TID, "tid": TID,
               "ts": 1000.0, "dur": 500.0}]
    launches = [(FILL, STREAM, TID, 900.0)] + [
        (name, stream, tid, 1100.0 if inside else 1700.0) for name, stream, tid, inside in kernels]
    for corr, (name, stream, tid, ts) in enumerate(launches):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": TID,
                       "tid": tid, "ts": ts, "dur": 5.0, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                       "ts": ts + 50, "dur": 3.0, "args": {"stream": stream, "correlation": corr}})
    return events


def _judge(*kernels, own=frozenset({"attention"})):
    return judge(summarise(_events(*kernels), TID), own)


def test_own_kernels_and_fills_on_the_callers_stream_pass():
    failure, finding = _judge((OWN, STREAM, TID, True), (FILL, STREAM, TID, True))
    assert failure is None and finding.startswith("passed: 2 kernel(s)")


@pytest.mark.parametrize(("kernel", "text"), [
    ((OWN, 13, TID, True), "not the caller's stream 7"),
    ((OWN, STREAM, 457828672, True), "from another thread"),
    ((OWN, STREAM, TID, False), "from outside the call"),
    ((GEMM, STREAM, TID, True), "not the candidate's own: nvjet"),
])
def test_side_streams_threads_deferred_launches_and_library_kernels_fail(kernel, text):
    failure, finding = _judge((OWN, STREAM, TID, True), kernel)
    assert failure is not None and failure.code == Code.TRACE_VIOLATION and finding == "failed"
    assert text in failure.reason


def test_a_call_that_launches_nothing_fails():
    failure, _ = _judge()
    assert failure is not None and "no GPU kernel" in failure.reason


def test_a_trace_without_the_marker_is_reported_as_skipped_not_blamed_on_the_kernel():
    failure, finding = judge(summarise(_events()[:1], TID), frozenset())
    assert failure is None and finding.startswith("skipped")


@pytest.mark.parametrize(("name", "base"), [
    (OWN, "attention"),
    ("(anonymous namespace)::append_kv(char const*, char*, int const*, int, long)", "append_kv"),
    ("wild(float*)", "wild"),
    (FILL, "vectorized_elementwise_kernel"),
])
def test_base_name(name, base):
    assert base_name(name) == base


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_own_kernels_reads_the_nvcc_host_stubs_of_the_object_file(tmp_path):
    # nvcc's host stub for kernel K is a C++ function named __device_stub__<mangled K>
    src = tmp_path / "stub.cpp"
    src.write_text(
        "namespace { struct Params { int x; }; }\n"
        "void __device_stub__Z4wildPf(float*) {}\n"
        "namespace { void __device_stub__ZN12_GLOBAL__N_19attentionILi64EEEvNS_6ParamsE("
        "Params const&) {} }\n"
        "void use() { Params p{1}; __device_stub__ZN12_GLOBAL__N_19attentionILi64EEEvNS_6ParamsE"
        "(p); }\n")
    subprocess.run(["g++", "-c", str(src), "-o", str(tmp_path / "candidate.cuda.o")], check=True)
    assert own_kernels(tmp_path / "ks_x.so") == {"wild", "attention"}
