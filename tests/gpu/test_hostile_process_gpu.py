"""Issue 21, class 2 on fa3_hopper (``pytest -m gpu``): what the candidate's process writes.

``write_escape.cu`` reaches libc's file functions by address (no symbol the static checks
see) and writes a ``.pth`` file into the running torch's site-packages, a file into the build
cache and one into ``/tmp``. The GPU policy lets the worker write files (the profiler's
trace), so today they land; once the worker may write only its private folder they must not,
and a run whose candidate changed protected places fails. The files are removed either way.
"""

from pathlib import Path

import pytest

from evals.harness import Code, RunSettings, evaluate
from tests.helpers import BUILD_CACHE, ROOT

pytestmark = pytest.mark.gpu

CHEATS = ROOT / "tests" / "cheats" / "fa3_hopper"
PREFILL = "smoke-bf16-d128-s512-b2-h8k2-causal"


def _targets() -> list[Path]:
    """Where the cheat writes: torch's site-packages, the build cache, ``/tmp``."""
    import torch

    site = Path(torch.__file__).resolve().parent.parent
    return [
        site / "kernelseek_escape_probe.pth",
        BUILD_CACHE / "builds" / "kernelseek_escape_probe",
        *Path("/tmp").glob("kernelseek-escape-*"),
    ]


def test_write_escape_leaves_no_file_and_a_write_fails_the_run(monkeypatch):
    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    for path in _targets():
        path.unlink(missing_ok=True)
    try:
        verdict = evaluate(
            RunSettings(
                "check",
                "fa3_hopper",
                CHEATS / "write_escape.cu",
                suite="smoke",
                scenario_ids=(PREFILL,),
                call_timeout_s=15,
            )
        )
        assert not [p for p in _targets() if p.exists()]
        failures = [verdict.failure] if verdict.failure is not None else []
        failures += [r.failure for r in verdict.results if r.failure is not None]
        if failures:  # confined, the writes fail; a write that landed fails the run
            assert failures[0].code == Code.SANDBOX_VIOLATION, failures[0]
    finally:
        for path in _targets():
            path.unlink(missing_ok=True)


def test_build_time_plant_is_never_loaded_by_the_build(monkeypatch, tmp_path):
    # integrity IV: its writes run from a static initialiser, wherever its library loads; the
    # build links it without loading it, and in the worker Landlock refuses them
    from evals.harness import get_target
    from evals.harness.building.build import build

    monkeypatch.delenv("KERNELSEEK_SANDBOX", raising=False)
    for path in _targets():
        path.unlink(missing_ok=True)
    try:
        built = build(get_target("fa3_hopper"), CHEATS / "build_time_plant.cu", cache_dir=tmp_path)
        assert built.library is not None, built.log
        assert str(built.confinement["writes"]).startswith("active"), built.confinement
        assert not [p for p in _targets() if p.exists()], "the build ran its initialiser"
        verdict = evaluate(
            RunSettings(
                "check",
                "fa3_hopper",
                CHEATS / "build_time_plant.cu",
                suite="smoke",
                scenario_ids=(PREFILL,),
                call_timeout_s=15,
            )
        )
        assert not [p for p in _targets() if p.exists()]
        failures = [verdict.failure] if verdict.failure is not None else []
        failures += [r.failure for r in verdict.results if r.failure is not None]
        if failures:
            assert failures[0].code == Code.SANDBOX_VIOLATION, failures[0]
    finally:
        for path in _targets():
            path.unlink(missing_ok=True)
