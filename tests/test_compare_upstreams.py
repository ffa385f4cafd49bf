"""benchmarks/compare_upstreams.py: two upstreams' device times from two verdicts, a control."""

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SCRIPT = ROOT / "benchmarks" / "compare_upstreams.py"


def verdict(path, times, contract=()):
    scenarios = [
        {"id": sid, "contract": sid in contract,
         "times_us": {name: {"median_us": us} for name, us in by_name.items()}}
        for sid, by_name in times.items()
    ]  # fmt: skip
    path.write_text(json.dumps({"scenarios": scenarios}))
    return path


def test_ratios_on_shared_study_scenarios_with_the_control_drift(tmp_path):
    a = verdict(tmp_path / "a.json", {
        "s1": {"fa3": 100.0, "cudnn": 50.0}, "s2": {"fa3": 10.0, "cudnn": 20.0},
        "only_a": {"fa3": 1.0}, "c": {"fa3": 1.0, "cudnn": 1.0},
    }, contract={"c"})  # fmt: skip
    b = verdict(tmp_path / "b.json", {
        "s1": {"fa4": 200.0, "cudnn": 55.0}, "s2": {"fa4": 40.0, "cudnn": 22.0},
        "c": {"fa4": 9.0, "cudnn": 1.0},
    }, contract={"c"})  # fmt: skip
    out = tmp_path / "cmp.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), f"{a}:fa3", f"{b}:fa4", "--control", "cudnn",
         "--out", str(out)], capture_output=True, text=True, check=True,
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert [r["id"] for r in doc["rows"]] == ["s1", "s2"]  # shared study scenarios only
    assert doc["geomean_ratio"] == pytest.approx((2.0 * 4.0) ** 0.5)
    assert doc["geomean_control_ratio"] == pytest.approx(1.1)
    assert "geomean fa4/fa3 2.828 over 2; control cudnn 1.100" in proc.stdout


def test_a_bad_argument_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "missing.json:fa3", "x:fa4"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2 and "VERDICT.json:UPSTREAM" in proc.stderr
    assert "Traceback" not in proc.stderr
