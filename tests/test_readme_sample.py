"""README.md's sample of the main job is today's report of a stored run (issue 41).

A change to the report's format fails here until ``python scripts/readme_sample.py`` rewrites
the sample; the demo's stated expectation holds for the stored run.
"""

from __future__ import annotations

import json
import runpy

from tests.helpers import ROOT

SCRIPT = runpy.run_path(str(ROOT / "scripts" / "readme_sample.py"))


def test_the_readme_sample_is_what_the_report_code_prints_today():
    assert SCRIPT["main"](["--check"]) == 0


def test_the_demo_says_what_its_stored_run_shows():
    low, high = SCRIPT["expected_range"]()
    doc = json.loads((ROOT / "results" / "readme" / "demo-verdict.json").read_text())
    assert doc["status"] == "ok" and doc["suite"] == "dev"
    speedup = doc["aggregates"]["geomean_speedup"]["sdpa"]
    assert low <= 1 / speedup <= high, f"SDPA {1 / speedup:.1f}x faster, the demo says {low}-{high}"


def test_a_changed_report_fails_the_check(monkeypatch):
    monkeypatch.setitem(SCRIPT["sample"].__globals__, "WIDTH", 60)  # another wrapping
    assert SCRIPT["main"](["--check"]) == 1
