"""benchmarks/forge_headroom.py: the smallest report each bound allows, read off a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.harness.clock_checks.wall_settings import GPU_GATED_WALL
from evals.harness.verdict.record import ScenarioResult
from tests.helpers import ROOT, load_benchmark

forge_headroom = load_benchmark("forge_headroom")
S37 = ROOT / "results/measurements/h100/2026-12-06-s37/start-dev/start-dev.json"


def _scenario(*, median: float, wall: float, calls: int, traced: float, floor: float = 1.0):
    """A timed, gated scenario of the recorded start.cu verdict with the figures replaced."""
    raw = json.loads(S37.read_text())["scenarios"][0]
    raw["times_us"]["candidate"]["median_us"] = median
    raw["timing"]["wall"] |= {"per_call_us": wall, "best_calls": calls, "gated": True}
    raw["checks"]["trace"] = f"passed: 1 kernel(s) (3 of 3 calls; traced {traced} us a call)"
    raw["floor_us"] = floor
    return ScenarioResult.from_json(raw)


def test_the_wall_bound_sets_the_smallest_report_on_a_long_call():
    slack = GPU_GATED_WALL.margin_us + GPU_GATED_WALL.overhead_us / 10
    r = 900.0
    wall = (1 + GPU_GATED_WALL.tolerance) * r + slack
    found = forge_headroom.headroom(_scenario(median=1000.0, wall=wall, calls=10, traced=1000.0))
    assert found.bound == "wall"
    assert found.r_min_us == pytest.approx(r)
    recorded = json.loads(S37.read_text())["scenarios"][0]["timing"]["wall"]["gross_us"]
    assert found.gross_us == recorded["median_us"]  # the flips and digests left in
    assert found.gain == pytest.approx(1000.0 / r)


def test_the_trace_and_roofline_bounds_take_over_where_they_are_higher():
    traced = forge_headroom.headroom(_scenario(median=30.0, wall=5.0, calls=100, traced=40.0))
    assert traced.bound == "trace" and traced.r_min_us == pytest.approx((40.0 - 10.0) / 1.25)
    roof = forge_headroom.headroom(
        _scenario(median=30.0, wall=5.0, calls=100, traced=10.0, floor=29.0)
    )
    assert roof.bound == "roofline" and roof.gain == pytest.approx(30.0 / 29.0)


def test_a_report_above_the_work_is_no_gain():
    found = forge_headroom.headroom(_scenario(median=100.0, wall=400.0, calls=10, traced=100.0))
    assert found.gain == 1.0


def test_the_recorded_dev_run_prints_its_headline_bound(capsys):
    assert forge_headroom.main([str(S37)]) == 0
    out = capsys.readouterr().out
    assert "36 gated timed scenarios" in out
    assert "headline (study): geomean gain 1.063, largest 1.104, 26" in out


def test_a_missing_verdict_is_a_one_line_error(tmp_path: Path, capsys):
    assert forge_headroom.main([str(tmp_path / "none.json")]) == 2
    assert "no such verdict file" in capsys.readouterr().err


@pytest.mark.parametrize("body", [b"not json", b'{"schema": "other"}', b"\x1f\x8bbroken"])
def test_a_file_that_is_not_a_verdict_is_a_one_line_error(tmp_path: Path, capsys, body):
    path = tmp_path / ("bad.json.gz" if body.startswith(b"\x1f") else "bad.json")
    path.write_bytes(body)
    assert forge_headroom.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a readable verdict" in err and err.count("\n") == 1


def test_another_tolerance_is_read_as_a_what_if_with_the_honest_failures_named(capsys):
    assert forge_headroom.main(["--tolerance", "0.06", str(S37)]) == 0
    out = capsys.readouterr().out
    assert "headline (study): geomean gain 1.063" not in out  # read under 1.06, not 1.10
    failing = out.split("at tolerance 0.06 the honest kernel fails ")[1]
    assert int(failing.split(":")[0]) > 0  # U runs over 1.06x its median somewhere on dev
    assert "one fraction: at most" in out


def test_a_tolerance_out_of_range_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        forge_headroom.main(["--tolerance", "-1", str(S37)])
    assert exc.value.code == 2 and "--tolerance" in capsys.readouterr().err
