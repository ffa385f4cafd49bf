"""The anti-caching probe where inputs are too large to copy twice: in place, owed by the parent.

Such inputs (the largest KV caches of the GPU targets' full suites) once skipped the probe, so a
cache keyed on the key buffer's address went unchecked there. The worker now runs B three times,
rewrites a few rows of k and v in place and calls again; the parent decides from the scenario,
not from the worker's answer, how many outputs the probe owes. The CPU target stands in, with
the size limit lowered so that every input set counts as too large.
"""

from collections.abc import Callable

import pytest
import torch

from evals.harness import Code
from evals.harness.judging import judge
from evals.harness.targets import get_target, guards
from evals.harness.worker.serve import Worker
from evals.harness.worker_link import channel

SEEDS = (2, 3)  # B's inputs, the rewrite's


@pytest.fixture
def target():
    return get_target("cpu_attention")


@pytest.fixture
def scenario(target):
    return target.load_suite("smoke").scenarios[0]


@pytest.fixture
def too_large(monkeypatch):
    """Every input set counts as too large to copy twice, in the worker and in the parent."""
    monkeypatch.setattr(guards, "CLONE_LIMIT_BYTES", 0)


def _probe(worker, scenario):
    request = {"op": "probe", "scenario": scenario.to_json(), "seed_a": 1,
               "seed_b": SEEDS[0], "seed_c": SEEDS[1]}  # fmt: skip
    header, payload = worker.probe(request)
    return header, channel.unpack_tensors(header["tensors"], payload)


def _keyed_on_k(worker, monkeypatch):
    """The honest upstream behind a cache of outputs keyed on the key buffer's address."""
    honest = worker.prepare
    cache: dict[int, torch.Tensor] = {}

    def prepare(inputs) -> Callable[[], torch.Tensor]:
        call = honest(inputs)

        def cached() -> torch.Tensor:
            key = inputs["k"].data_ptr()
            if key not in cache:
                cache[key] = call()
            return cache[key].clone()

        return cached

    monkeypatch.setattr(worker, "prepare", prepare)


def test_inputs_too_large_to_copy_are_probed_in_place_and_an_honest_kernel_passes(
    too_large, target, scenario
):
    header, outputs = _probe(Worker(target, candidate_upstream="sdpa"), scenario)
    assert header["skipped"] and len(outputs) == 1
    assert judge._check_probe_outputs(target, scenario, outputs, SEEDS) == (None, True)


def test_a_cache_keyed_on_the_key_buffer_is_caught_in_place(
    too_large, target, scenario, monkeypatch
):
    worker = Worker(target, candidate_upstream="sdpa")
    _keyed_on_k(worker, monkeypatch)
    _, outputs = _probe(worker, scenario)
    failure, in_place = judge._check_probe_outputs(target, scenario, outputs, SEEDS)
    assert in_place and failure is not None and failure.code == Code.STALE_RESULT
    assert "rewritten in place" in failure.reason


def test_the_same_cache_is_caught_by_the_whole_probe_on_smaller_inputs(
    target, scenario, monkeypatch
):
    worker = Worker(target, candidate_upstream="sdpa")
    _keyed_on_k(worker, monkeypatch)
    header, outputs = _probe(worker, scenario)
    assert "skipped" not in header and len(outputs) == 3
    failure, in_place = judge._check_probe_outputs(target, scenario, outputs, SEEDS)
    assert not in_place and failure is not None and failure.code == Code.STALE_RESULT


def test_the_parent_not_the_worker_decides_how_many_outputs_the_probe_owes(target, scenario):
    # a candidate's worker that claims its inputs were too large, or answers with nothing,
    # fails the probe instead of skipping it
    _, outputs = _probe(Worker(target, candidate_upstream="sdpa"), scenario)
    for kept in (outputs[-1:], []):
        failure, in_place = judge._check_probe_outputs(target, scenario, kept, SEEDS)
        assert not in_place and failure is not None and failure.code == Code.STALE_RESULT
        assert failure.reason == f"the probe's worker answered with {len(kept)} outputs, not 3"
    assert judge._check_probe_outputs(target, scenario, outputs, SEEDS) == (None, False)
