"""fa3_hopper on a Hopper GPU with FA3 installed: run with `pytest -m gpu` on the H200."""

import pytest
import torch

from evals.harness import Code, RunSettings, evaluate
from tests.helpers import ROOT, failures_of

pytestmark = pytest.mark.gpu

START = ROOT / "kernels" / "fa3_hopper" / "start.cu"
BAD = ROOT / "tests" / "data" / "fa3_hopper"


@pytest.fixture(scope="module")
def start_bench():
    return evaluate(RunSettings("bench", "fa3_hopper", START, suite="smoke", seed=11))


def test_start_kernel_is_correct_on_every_scenario_kind(start_bench):
    v = start_bench
    assert v.status == "ok", [r.failure for r in v.results if r.failure]
    kinds = {r.scenario.params["kind"] for r in v.results}
    assert kinds == {"prefill", "varlen", "kvcache"}
    assert any(r.scenario.params["dtype"] == "float8_e4m3fn" for r in v.results)
    for r in v.results:
        assert r.errors["max_abs"] <= r.errors["tolerance"]
        if r.scenario.covering:  # verified and probed, never timed (issue 40)
            continue
        assert r.times["candidate"].median_us > 0 and "fa3" in r.times
        assert r.floor_us is not None and r.floor_us < r.times["candidate"].median_us


def test_verdict_records_gpu_provenance(start_bench):
    doc = start_bench.to_json()
    prov = doc["provenance"]
    assert "H" in prov["device"]["name"] and prov["device"]["driver"]
    assert prov["cuda"] and prov["upstreams"]["fa3"] != "not installed"
    assert prov["ceilings"]["matmul_tflops"] > 100 and prov["ceilings"]["copy_gbps"] > 1000
    assert "sm_clock_mhz" in prov["device_state"]["before"]
    # SDPA backends report what they cannot run instead of dropping scenarios
    assert any(sc["unsupported"] for sc in doc["scenarios"])


def test_self_check_fa3_against_itself():
    v = evaluate(RunSettings("bench", "fa3_hopper", None, suite="smoke",
                             candidate_upstream="fa3"))
    assert v.status == "ok", failures_of(v)
    geo = v.to_json()["aggregates"]["geomean_speedup"]["fa3"]
    assert 0.95 < geo < 1.05, geo


@pytest.mark.parametrize(("kernel", "code"), [("wrong.cu", Code.INACCURATE),
                                              ("crash.cu", Code.EXCEPTION),
                                              ("build_error.cu", Code.BUILD_ERROR)])
def test_bad_kernels(kernel, code):
    v = evaluate(RunSettings("check", "fa3_hopper", BAD / kernel, suite="smoke", keep_going=True))
    codes = [r.failure.code if r.failure else None for r in v.results]
    # a drawn scenario whose every row sees no key has an all-zero output: zeros are right there
    study = [c for c, r in zip(codes, v.results, strict=True) if not r.scenario.contract]
    assert codes[0] == code and all(c is not None for c in study), [r.failure for r in v.results]
    if code != Code.INACCURATE:  # a build error or a crash fails every scenario alike
        assert codes == [code] * len(codes)


def test_hang_is_killed():
    v = evaluate(RunSettings("check", "fa3_hopper", BAD / "hang.cu", suite="smoke",
                             call_timeout_s=15,
                             scenario_ids=("smoke-bf16-d64-s1000-b2-h4-full",)))
    assert [r.failure.code for r in v.results] == [Code.TIMEOUT]


@pytest.mark.usefixtures("device_alone")
def test_event_timer_flushes_l2_and_scales_with_work():
    from evals.harness.measurement.gpu import CudaEventTimer

    timer = CudaEventTimer()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    assert timer.flush_bytes >= 2 * l2
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = a[:4096, :4096].contiguous()
    big = sorted(timer.device_us(lambda: a @ a) for _ in range(5))[2]
    small = sorted(timer.device_us(lambda: b @ b) for _ in range(5))[2]
    assert big > 4 * small > 0
