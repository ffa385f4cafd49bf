"""benchmarks/honest_margins.py: every honest CPU kernel keeps a margin inside the accuracy rule.

A run draws its contract scenarios from its seed, so an honest kernel near the rule's edge fails
now and then; these fixed seeds find one before a CI run does.
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT, load_benchmark

SEEDS = "40"


def _margins():
    return load_benchmark("honest_margins")


@pytest.mark.long
def test_every_honest_kernel_stays_well_inside_the_rule(capsys):
    margins = _margins()
    rc = margins.main(["--seeds", SEEDS])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0, lines
    names = sorted(line.split(":")[0] for line in lines)
    assert names == sorted(k.name for k in margins.honest_kernels())
    assert all(f"over {_drawn_count()} drawn scenarios" in line for line in lines), lines


def _drawn_count():
    """The scenarios seeds 0 .. 39 draw for the full suite: 8 random each, and each's covering
    set."""
    from evals.harness.contract.contract_draw import drawn_scenarios
    from evals.harness.targets import get_target

    target = get_target("cpu_attention")
    return sum(len(drawn_scenarios(target, "full", seed)) for seed in range(int(SEEDS)))


@pytest.mark.long
def test_a_kernel_right_by_a_hair_is_flagged(capsys):
    # its exp is off by up to 1.5e-5: it passes most runs and failed a CI run (the random
    # draws alone put it at 0.8 of the tolerance; a covering scenario, fp32, at 1.06)
    rc = _margins().main(["--seeds", SEEDS, str(ROOT / "tests/data/cpu_attention/loose_exp.cpp")])
    out = capsys.readouterr().out
    assert rc == 1
    worst = re.search(r"loose_exp\.cpp: worst (\d+\.\d+)", out)
    assert worst and float(worst.group(1)) >= 0.75, out
    assert "fp32" in out and "OVER THE LIMIT" in out


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path):
    margins = _margins()
    assert margins.main([str(tmp_path / "nope.cpp")]) == 2
    assert margins.main(["--seeds", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"honest_margins: no such kernel file: {tmp_path / 'nope.cpp'}",
        "honest_margins: --seeds must be at least 1",
    ]
