"""The gated wall-clock check on a GPU (``pytest -m gpu``): honest work within a tenth, forges not.

Each batch is queued behind the parent's gate and timed from its opening
(:mod:`evals.harness.clock_checks.gated_batch`), so the host's issue work is out of the
interval and U is held to the device time alone, within 1.10x, the same batch of null calls
subtracted (and subtracted again once the candidate's process is gone). An honest kernel and
FA3 judged as the candidate pass it on every timed smoke scenario; a forge of
``timer_forge_padded.cu`` that reports 0.85 of each call (inside the trace check's 1.25x, its
host issue padded past the ungated check's reach) fails it, and so does start.cu waiting on the
host for its own work in every call (at once, for the contract's reason).
"""


import pytest

from evals.harness import Code, RunSettings, evaluate
from tests.helpers import ROOT, load_benchmark

pytestmark = pytest.mark.gpu

FP8 = "smoke-fp8-d256-s256-b1-h4-causal"
"""A call of about 75 us (start.cu on an H100): the forge's 1.18x stands clear of the bound's
1.10x + 0.5 us + 20 us a batch, whatever the batch's calls."""


def _wall_checks(verdict):
    """Each timed scenario's wall-clock figures and what the check said."""
    return {r.scenario.id: (r.timing.get("wall", {}), r.checks.get("wall_clock", ""))
            for r in verdict.results if "candidate" in r.times}  # fmt: skip


@pytest.mark.parametrize("who", ["start.cu", "fa3"])
def test_honest_work_passes_the_gated_check_on_every_timed_scenario(who):
    kernel = ROOT / "kernels" / "fa3_hopper" / "start.cu" if who == "start.cu" else None
    verdict = evaluate(RunSettings("bench", "fa3_hopper", kernel, suite="smoke",
                                   candidate_upstream=None if kernel else "fa3"))  # fmt: skip
    checks = _wall_checks(verdict)
    assert checks and verdict.status == "ok", verdict.to_json()["checks"]
    for scenario, (figures, said) in checks.items():
        assert figures.get("gated") is True and said.startswith("passed"), (scenario, said)
        # the null batches subtracted; judged again, once the candidate was gone, on a U that
        # a second null can only lengthen (null_recheck.py)
        late = figures.get("late_per_call_us", figures["per_call_us"])
        assert figures["null_us"] > 0 and late >= figures["per_call_us"] - 1e-6, figures
        ratio = figures["per_call_us"] / figures["reported_us"]
        print(f"{who} {scenario}: U {figures['per_call_us']:.1f} us (again {late:.1f}), "
              f"reported {figures['reported_us']:.1f} us, {ratio:.3f}")
    assert any("late_per_call_us" in figures for figures, _ in checks.values())


def test_a_forge_inside_the_trace_checks_bound_fails_the_gated_check(tmp_path):
    forge_gain = load_benchmark("gpu_forge_gain")
    forged, twin = forge_gain.variants(tmp_path, keep=0.85, hide_us=0, floor=0.85, pad_us=300)
    verdicts = {
        kernel.name: evaluate(RunSettings("bench", "fa3_hopper", kernel, suite="smoke",
                                          scenario_ids=(FP8,), call_timeout_s=15))
        for kernel in (forged, twin)
    }  # fmt: skip
    assert verdicts[twin.name].status == "ok", verdicts[twin.name].to_json()["checks"]
    failures = [r.failure for r in verdicts[forged.name].results if r.failure is not None]
    assert failures and failures[0].code == Code.TIMING_MISMATCH, failures
    assert "the parent's clock saw" in failures[0].reason


HOST_WAIT = """  {  // a host wait in every call (the contract: only on a shape's first use)
    cudaEvent_t done;
    cudaEventCreate(&done);
    cudaEventRecord(done, c10::cuda::getCurrentCUDAStream());
    cudaEventSynchronize(done);
    cudaEventDestroy(done);
  }
  return out;
"""


def test_a_host_wait_in_every_call_fails_the_gated_check_for_the_contracts_reason(tmp_path):
    source = (ROOT / "kernels" / "fa3_hopper" / "start.cu").read_text()
    assert source.count("  return out;\n") == 2  # both entry points wait
    kernel = tmp_path / "host_wait.cu"
    kernel.write_text(source.replace("  return out;\n", HOST_WAIT))
    verdict = evaluate(RunSettings("bench", "fa3_hopper", kernel, suite="smoke",
                                   scenario_ids=(FP8,), call_timeout_s=15))  # fmt: skip
    failures = [r.failure for r in verdict.results if r.failure is not None]
    assert failures and failures[0].code == Code.HOST_WORK, failures
    assert "first use" in failures[0].reason
