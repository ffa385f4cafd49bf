"""Class 4 on the H200 (``pytest -m gpu``): an FA3 outlier never becomes start.cu's speedup."""

from __future__ import annotations

import pytest

from evals.harness.pipeline.runner import RunSettings, evaluate
from tests.helpers import ROOT
from tests.test_upstream_outliers import inflate_one_upstream_round

pytestmark = pytest.mark.gpu

START_CU = ROOT / "kernels" / "fa3_hopper" / "start.cu"
THREE = ("smoke-bf16-d64-s1000-b2-h4-full", "smoke-bf16-d128-s512-b2-h8k2-causal",
         "smoke-bf16-d128-b4-c3000-h8k2")
"""Three smoke scenarios FA3 runs: enough for a median speedup."""


@pytest.mark.parametrize("uniform", [False, True], ids=["spread", "uniform"])
def test_class4_start_cu_gains_nothing_from_an_fa3_outlier(monkeypatch, uniform):
    # the first FA3 round of one scenario comes back 100x slow (its median alone, or every
    # call): re-timed, it never counts, and no candidate process lives while FA3 is timed
    seen = inflate_one_upstream_round(monkeypatch, "fa3", 100.0, uniform=uniform)
    verdict = evaluate(RunSettings(command="bench", target="fa3_hopper", kernel=START_CU,
                                   suite="smoke", seed=5, scenario_ids=THREE))
    assert verdict.status == "ok", verdict.failure
    assert not any(seen["alive"]), "an upstream was timed beside a live candidate process"
    hit = next(r for r in verdict.results if r.scenario.id == seen["inflated"])
    assert hit.times["fa3"].median_us < 100.0 * seen["true_us"] / 10
    assert hit.timing["retimes"], hit.flags
    assert (hit.speedup("fa3") or 0.0) < 1.0  # start.cu is about 0.2x FA3
