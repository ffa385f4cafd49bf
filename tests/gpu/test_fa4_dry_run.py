"""fa4_blackwell's dry run on a Hopper GPU (`KERNELSEEK_FA4_ARCH=sm_90a`) with FlashAttention-4
installed: run with `pytest -m gpu` on the H200 (skipped where FA4 does not import)."""

import pytest

from evals.harness import RunSettings, evaluate
from evals.targets.fa4_blackwell.target import DRY_RUN_NOTE, Fa4Blackwell
from tests.helpers import ROOT, failures_of

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(Fa4Blackwell("sm_90a").missing_upstream() is not None,
                       reason="FlashAttention-4 does not import here"),
]

START = ROOT / "kernels" / "fa4_blackwell" / "start.cu"


@pytest.fixture(autouse=True)
def dry_run(monkeypatch):
    monkeypatch.setenv("KERNELSEEK_FA4_ARCH", "sm_90a")


def test_fa4_against_itself_and_its_compile_recorded_apart():
    v = evaluate(RunSettings("bench", "fa4_blackwell", None, suite="smoke",
                             candidate_upstream="fa4"))
    doc = v.to_json()
    assert v.status == "ok", failures_of(v)  # the append's lengths follow a refilled input set
    assert 0.95 < doc["aggregates"]["geomean_speedup"]["fa4"] < 1.05, doc["aggregates"]
    assert doc["provenance"]["device"]["note"] == DRY_RUN_NOTE
    first = [sc["timing"].get("first_call_ms", {}).get("fa4", 0.0) for sc in doc["scenarios"]]
    assert max(first) > 300.0, first  # a CuTe DSL compile, in the upstream's probe call
    for sc in doc["scenarios"]:
        fa4 = sc["times_us"].get("fa4")
        assert fa4 is None or fa4["median_us"] < 300_000.0  # and in no timed figure


def test_start_kernel_dry_run_is_correct_and_says_what_it_is():
    v = evaluate(RunSettings("bench", "fa4_blackwell", START, suite="smoke", seed=7))
    doc = v.to_json()
    assert v.status == "ok", failures_of(v)
    assert doc["provenance"]["device"]["arch"] == "sm_90a"
    assert doc["provenance"]["device"]["note"] == DRY_RUN_NOTE
    assert all(sc["correct"] for sc in doc["scenarios"])
