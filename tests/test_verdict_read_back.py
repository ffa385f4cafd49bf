"""A saved verdict reads back as the typed record the run wrote (issue 42), and ``report``
prints from it exactly what the run printed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evals.harness.verdict.record import VERDICT_SCHEMA, Verdict
from tests.helpers import ROOT, START_CPU

ONE = "smoke-fp32-d64-q1-k67-h4k1-causal"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[str, dict]:
    """One bench of the start kernel on one scenario: its printed report and its verdict."""
    out = tmp_path_factory.mktemp("verdict") / "verdict.json"
    proc = subprocess.run(
        [sys.executable, "-m", "evals.harness", "bench", "--target", "cpu_attention",
         "--kernel", str(START_CPU), "--suite", "smoke", "--scenario", ONE, "--seed", "5",
         "--quiet", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout, json.loads(out.read_text())


def test_a_verdict_reads_back_to_the_same_json(run):
    _, doc = run
    verdict = Verdict.from_json(doc)
    assert verdict.results[0].times["candidate"].median_us > 0
    assert json.loads(json.dumps(verdict.to_json())) == doc


def test_report_prints_what_the_run_printed(run, tmp_path):
    printed, doc = run
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "evals.harness", "report", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout == printed


@pytest.mark.parametrize(
    ("doc", "text"),
    [
        ({"schema": "other/1"}, "not a verdict of schema"),
        ([], "not a verdict of schema"),
        ({"schema": VERDICT_SCHEMA, "command": "bench"}, "a malformed verdict: KeyError"),
    ],
)
def test_what_is_not_a_verdict_is_one_line(doc, text, tmp_path):
    with pytest.raises(ValueError, match=text):
        Verdict.from_json(doc)
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "evals.harness", "report", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: cannot read the verdict") and text in line
