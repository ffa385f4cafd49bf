"""One float64 reference serves every output computed from the same inputs."""

from __future__ import annotations

import pytest
import torch

from evals.harness import get_target
from evals.harness.failures import Code
from evals.harness.verification.verify import check_each


@pytest.fixture
def case():
    target = get_target("cpu_attention")
    scenario = target.load_suite("smoke").scenarios[0]
    inputs = target.make_inputs(scenario, 7)
    good = target.upstream(target.accuracy.baseline).prepare(inputs)()
    return target, scenario, inputs, good


def test_one_reference_for_all_outputs(case, monkeypatch):
    target, scenario, inputs, good = case
    calls = []
    real = type(target).reference

    def counted(self, *args):
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(type(target), "reference", counted)
    wrong = good.clone()
    wrong.view(-1)[0] += 10.0
    failures = check_each(target, scenario, [good, wrong, good[..., :1]], inputs)
    assert len(calls) == 1
    assert failures[0] is None
    assert failures[1] is not None and failures[1].code == Code.INACCURATE
    assert failures[2] is not None and failures[2].code == Code.WRONG_SHAPE


def test_no_reference_when_every_output_has_the_wrong_shape(case, monkeypatch):
    target, scenario, inputs, good = case
    monkeypatch.setattr(type(target), "reference", lambda *a: pytest.fail("computed"))
    (failure,) = check_each(target, scenario, [good.to(torch.float64)], inputs)
    assert failure is not None and failure.code == Code.WRONG_DTYPE
