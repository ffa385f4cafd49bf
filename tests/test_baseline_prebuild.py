"""The trivial kernel built beside the candidate gives the symbol check the same baseline."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evals.harness import get_target
from evals.harness.building.build import build
from evals.harness.building.compile_command import read_compile_command
from evals.harness.static.baseline_prebuild import start
from evals.harness.static.static_checks import undefined_symbols
from evals.harness.static.symbol_baseline import baseline_symbols
from tests.helpers import BUILD_CACHE, START_CPU


def _no_compile(path: Path) -> list[str]:
    raise AssertionError(f"the baseline was compiled again ({path})")


def test_prebuilt_baseline_is_found_and_equals_a_compiled_one(tmp_path, monkeypatch):
    target = get_target("cpu_attention")
    policy = target.policy
    assert policy is not None and policy.trivial_kernel is not None
    candidate = build(target, START_CPU, cache_dir=BUILD_CACHE)
    assert candidate.library is not None
    cmd = read_compile_command(candidate.library.parent)
    assert cmd is not None

    thread = start(target, clean_env=False, cache=tmp_path / "shared" / "builds")
    assert thread is not None
    thread.join(timeout=600)
    assert not thread.is_alive()
    shared = tmp_path / "shared" / "builds"
    assert list(shared.glob("baseline-*/symbols.json")), "the prebuild recorded no baseline"

    # the candidate's own command finds the prebuilt record: nothing is compiled again
    found = baseline_symbols(cmd, policy.trivial_kernel, shared, _no_compile)
    # and it equals the baseline compiled from scratch with the candidate's command
    fresh = baseline_symbols(cmd, policy.trivial_kernel, tmp_path / "fresh", undefined_symbols)
    assert found == fresh and len(found) > 10


def test_no_prebuild_where_symbols_are_not_checked(monkeypatch):
    target = get_target("cpu_attention")
    assert target.policy is not None
    monkeypatch.setattr(target, "policy", None, raising=False)
    assert start(target, clean_env=False, cache=Path("/nonexistent")) is None


@pytest.mark.parametrize("source", [None, "this is not C++"])
def test_a_failed_prebuild_records_nothing_and_raises_nothing(tmp_path, monkeypatch, source):
    target = get_target("cpu_attention")
    assert target.policy is not None
    trivial = tmp_path / "trivial.cpp"
    if source is not None:
        trivial.write_text(source)
    monkeypatch.setattr(
        target, "policy", dataclasses.replace(target.policy, trivial_kernel=trivial)
    )
    thread = start(target, clean_env=False, cache=tmp_path / "shared" / "builds")
    assert thread is not None
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert not list((tmp_path / "shared").rglob("symbols.json"))


def test_a_score_reads_its_symbol_baseline_from_its_own_cache(tmp_path, monkeypatch):
    # integrity IV: a name planted in the shared cache's baseline record (an agent's shell can
    # write there) would let a symbol outside the allow-list through; score builds its
    # baseline afresh in its private cache and never reads the shared one
    import json

    from evals.harness import Code, RunSettings, evaluate
    from tests.helpers import ROOT

    shared = tmp_path / "shared"
    monkeypatch.setenv("KERNELSEEK_CACHE", str(shared))
    cheat = ROOT / "tests" / "cheats" / "cpu_attention" / "thread_via_at_launch.cpp"
    verdict = evaluate(RunSettings("check", "cpu_attention", cheat, suite="smoke"))
    assert verdict.failure is not None and verdict.failure.code == Code.FORBIDDEN_SYMBOL
    prefix = "outside the target's allow-list: "
    assert prefix in verdict.failure.reason, verdict.failure.reason
    symbol = verdict.failure.reason.split(prefix, 1)[1]
    [record] = (shared / "builds").glob("baseline-*/symbols.json")
    record.write_text(json.dumps([*json.loads(record.read_text()), symbol]))  # the plant
    planted = evaluate(RunSettings("check", "cpu_attention", cheat, suite="smoke"))
    assert planted.checks["symbols"].startswith("passed"), planted.checks["symbols"]  # it works
    scored = evaluate(RunSettings("score", "cpu_attention", cheat, suite="smoke"))
    assert scored.failure is not None and scored.failure.code == Code.FORBIDDEN_SYMBOL
    assert symbol in scored.failure.reason
