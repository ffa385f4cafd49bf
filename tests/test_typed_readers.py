"""The Inspect side reads a verdict as the typed record the harness wrote, never by its keys.

A verdict written by the harness (``Verdict.to_json``, through JSON text) is read by
``check_verdict`` into a :class:`Verdict`; the score computed from it is the one the dict logic
gave before (values, explanation and metadata), for an all-correct verdict and a failing one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from evals.bench.agent.profile import breakdown
from evals.bench.arms.open_ended import _fitness
from evals.bench.scoring.faults import verdict_fault
from evals.bench.scoring.harness_exec import HarnessRun
from evals.bench.scoring.relay_io import check_verdict
from evals.bench.scoring.scorer import ZERO, score_from_run
from evals.bench.scoring.verdict_store import last_verdict, remember
from evals.harness.failures import Code, Failure
from evals.harness.measurement.timing import TimingStats
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import Aggregates, ScenarioResult, Verdict, aggregates
from evals.stats import geomean

SHA = "ab" * 32


def _stats(median_us: float) -> TimingStats:
    return TimingStats(median_us=median_us, mad_us=1.0, min_us=median_us, max_us=median_us,
                       rse=0.01, n=20)  # fmt: skip


def _result(sid: str, times: dict[str, float], **kw: Any) -> ScenarioResult:
    params = kw.pop("params", {})
    contract = kw.pop("contract", False)
    return ScenarioResult(
        Scenario(sid, params, contract=contract),
        correct=kw.pop("correct", True),
        times={k: _stats(v) for k, v in times.items()},
        flops=1e9, bytes=1e8, errors={"max_abs": 1e-6}, **kw,
    )  # fmt: skip


def _verdict(*, failing: bool) -> Verdict:
    """Four scenarios: sdpa speedups 2, 4 and 1 on the study ones (geomean 2); fa is faster
    than sdpa on two and unsupported on the third; one contract scenario. ``failing``: the
    second scenario is inaccurate (so never timed)."""
    long_b = (
        _result("long-b", {}, correct=False,
                failure=Failure(Code.INACCURATE, "max error 3e-2 exceeds tolerance"))
        if failing
        else _result("long-b", {"candidate": 50.0, "sdpa": 200.0, "fa": 100.0},
                     timing={"converged": False}, flags=["timing did not converge"])
    )  # fmt: skip
    return Verdict(
        command="score", target="cpu_attention", suite="smoke", kernel={"sha256": SHA},
        seed=7, status="failed" if failing else "ok",
        results=[
            _result("short-a", {"candidate": 100.0, "sdpa": 200.0, "fa": 150.0},
                    params={"category": "short"}),
            long_b,
            _result("mid-c", {"candidate": 100.0, "sdpa": 100.0},
                    unsupported={"fa": "no fp8 path"}),
            _result("c1", {"candidate": 10.0, "sdpa": 1000.0}, contract=True),
        ],
        upstreams={"sdpa": "2.5", "fa": "3.0"},
        provenance={"device": {"arch": "x86_64"}},
        flags=["a flag"],
    )  # fmt: skip


def _read(verdict: Verdict) -> Verdict:
    """The harness's verdict through its channel: JSON text, checked by ``check_verdict``."""
    text = json.dumps(json.loads(json.dumps(verdict.to_json())))
    rc = {"ok": 0, "failed": 1, "error": 2}[verdict.status]
    read, reason = check_verdict(text, returncode=rc, command="score", kernel_sha256=SHA)
    assert reason is None and isinstance(read, Verdict)
    assert read.to_json() == json.loads(text)
    return read


# The scorer's logic as it was on the verdict's JSON (dict keys), to compare against.
def _category(s: dict[str, Any]) -> str:
    if s.get("contract"):
        return "contract"
    return str((s.get("params") or {}).get("category") or s["id"].split("-")[0])


def _dict_meta(doc: dict[str, Any], upstream: str) -> dict[str, Any]:
    study = [s for s in doc["scenarios"] if not s.get("contract")]
    names = [*(doc.get("upstreams") or {}), "fastest"]
    for s in study:
        names += [u for u in (s.get("speedup") or {}) if u not in names]
    ups = {}
    for name in names:
        ran = [v for s in study if (v := (s.get("speedup") or {}).get(name))]
        supported = sum(
            1 for s in study if name == "fastest" or name not in (s.get("unsupported") or {})
        )
        ups[name] = {"geomean": geomean(ran), "coverage": supported / len(study),
                     "scenarios": len(ran)}  # fmt: skip
    cats: dict[str, list[float]] = {}
    for s in doc["scenarios"]:
        cats.setdefault(_category(s), [])
        if value := (s.get("speedup") or {}).get(upstream):
            cats[_category(s)].append(float(value))
    rows = [
        {"id": s["id"], "category": _category(s), "correct": s["correct"],
         "failure": s.get("failure"), "speedup": s.get("speedup"),
         "unsupported": s.get("unsupported") or None,
         "candidate_us": (s["times_us"].get("candidate") or {}).get("median_us"),
         "errors": s.get("errors"), "flags": s.get("flags")}
        for s in doc["scenarios"]
    ]  # fmt: skip
    return {
        "scenarios": rows, "upstreams": ups,
        "categories": {c: geomean(v) for c, v in sorted(cats.items())},
        "flags": doc.get("flags"), "provenance": doc.get("provenance"), "seed": doc.get("seed"),
        "suite": doc.get("suite"), "status": doc.get("status"), "failure": doc.get("failure"),
    }  # fmt: skip


def test_an_all_correct_verdict_scores_as_the_dict_logic_did():
    verdict = _read(_verdict(failing=False))
    assert verdict_fault(verdict) is None
    score = score_from_run(HarnessRun(0, "", verdict, None, SHA, None), "sdpa")
    assert score.value == {
        "success": 1.0,
        "speedup": pytest.approx(2.0),  # (2 * 4 * 1) ** (1/3): the study scenarios only
        "speedup_vs_fastest": pytest.approx(3.0 ** (1 / 3)),  # fa 1.5, fa 2, sdpa 1
        "passed": 1.0,
        "coverage": 1.0,
    }
    assert score.explanation == (
        "all 4 scenarios correct; geomean speedup 2.000x vs sdpa (coverage 100%), 1.442x vs "
        "the fastest upstream per scenario; timing did not converge on 1 scenario(s) even "
        "after a re-time (their figures are less precise)"
    )
    meta = score.metadata
    assert meta is not None and meta["not_converged"] == 1
    assert meta["upstreams"]["fa"]["coverage"] == pytest.approx(2 / 3)
    assert meta["categories"] == {
        "contract": pytest.approx(100.0), "long": pytest.approx(4.0),
        "mid": pytest.approx(1.0), "short": pytest.approx(2.0),
    }  # fmt: skip
    expected = _dict_meta(verdict.to_json(), "sdpa")
    assert {k: meta[k] for k in expected} == expected
    json.dumps(meta)  # the score's metadata stays JSON


def test_a_failing_verdict_scores_zero_with_the_reason_as_the_dict_logic_did():
    verdict = _read(_verdict(failing=True))
    assert verdict_fault(verdict) is None
    score = score_from_run(HarnessRun(1, "", verdict, None, SHA, None), "sdpa")
    assert score.value == {**ZERO, "passed": 0.75, "coverage": 1.0}
    assert score.explanation == "3/4 scenarios correct; long-b: max error 3e-2 exceeds tolerance"
    meta = score.metadata
    assert meta is not None and "not_converged" not in meta
    [row] = [r for r in meta["scenarios"] if r["id"] == "long-b"]
    assert row["failure"] == {"code": "inaccurate", "reason": "max error 3e-2 exceeds tolerance"}
    assert row["candidate_us"] is None and row["speedup"] == {}
    expected = _dict_meta(verdict.to_json(), "sdpa")
    assert {k: meta[k] for k in expected} == expected
    assert _fitness(verdict, "sdpa") == (0.0, {})


def test_the_typed_aggregates_are_the_verdicts_json_aggregates():
    for failing in (False, True):
        verdict = _verdict(failing=failing)
        agg = verdict.aggregates
        assert isinstance(agg, Aggregates)
        assert agg.to_json() == verdict.to_json()["aggregates"]
        assert agg.to_json() == aggregates(verdict.results, verdict.upstreams)
    agg = _verdict(failing=False).aggregates
    assert (agg.scenarios, agg.passed, agg.all_correct, agg.study_scenarios) == (4, 4, True, 3)
    assert agg.not_converged == 1 and agg.geomean_speedup["sdpa"] == pytest.approx(2.0)
    assert (agg.contract.scenarios, agg.contract.passed, agg.contract.drawn) == (1, 1, 0)
    assert agg.contract.geomean_speedup["sdpa"] == pytest.approx(100.0)


def test_the_other_readers_read_the_typed_verdict():
    verdict = _read(_verdict(failing=False))
    geo, cats = _fitness(verdict, "sdpa")
    assert geo == pytest.approx(2.0)
    assert cats == {"short": 2.0, "long": 4.0, "mid": 1.0, "c1": 100.0}
    table = breakdown(verdict, "sdpa").splitlines()
    assert table[0] == "scenario  time_us  share  TFLOP/s  GB/s  speedup"
    assert table[1] == "short-a  100.0  38.5%  10.000  1000.0  2.000x"  # slowest first
    assert [line.split()[0] for line in table[1:]] == ["short-a", "mid-c", "long-b", "c1"]


def test_a_remembered_verdict_is_kept_as_json_and_read_back_typed():
    verdict = _read(_verdict(failing=False))
    remember("bench", verdict)
    kept = last_verdict("bench")
    assert isinstance(kept, Verdict) and kept.to_json() == verdict.to_json()
    remember("bench", None)
    assert last_verdict("bench") is None


def test_a_verdict_that_does_not_read_is_rejected_in_one_line():
    doc = _verdict(failing=False).to_json()
    del doc["scenarios"][0]["params"]
    verdict, why = check_verdict(json.dumps(doc), returncode=0, command="score", kernel_sha256=SHA)
    assert verdict is None and why is not None and "\n" not in why
    assert why.startswith("a malformed verdict: KeyError")
