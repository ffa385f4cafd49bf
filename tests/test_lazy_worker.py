"""A candidate's worker that does less work in its timing round than its answer claims.

It returns garbage from the timed calls (fast, and honestly timed as fast), then, when the
parent fetches the outputs it chose, makes the right ones on the spot, where no clock runs.
The round audit alone cannot see it (the round took what it reported); the round's
commitment to its kept outputs (:mod:`evals.harness.clock_checks.timed_commit`) does. Played by the
worker process itself, started with its ``time`` and ``timed_outputs`` replaced, as a candidate that
took over its worker could.
"""

import stat
import sys
from types import SimpleNamespace

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.worker_link import worker_client as worker_client_module
from tests.helpers import ROOT, START_CPU

LAZY_WORKER = '''#!{python}
"""A candidate's worker that skips its timed calls' work (test only; {mode})."""
import sys

import torch

sys.path.insert(0, {root!r})
from evals.harness.worker_link import channel
from evals.harness.worker import serve as worker
from evals.harness.scenarios import Scenario
from evals.harness.measurement.timing import call_seed

MODE = {mode!r}
args = sys.argv[1:]
assert args[:3] == ["-P", "-m", "evals.worker_entry"], args
argv = ["worker", *args[3:]]
honest_time = worker.Worker.time


def lazy_time(self, req):
    if not req.get("candidate", True):
        return honest_time(self, req)
    self.lazy_request = req
    self.prepare = lambda inputs: (lambda: torch.zeros_like(inputs["q"]))  # no work
    try:
        header, payload = honest_time(self, req)
    finally:
        del self.prepare
    if MODE == "few":  # claim to have kept a few outputs only: the ones it will make later
        pairs = list(zip(header["kept"], header.get("digests", header["kept"])))[::7]
        header["kept"] = [t for t, _ in pairs]
        if "digests" in header:
            header["digests"] = [d for _, d in pairs]
    return header, payload


def lazy_outputs(self, req):
    r = self.lazy_request
    scenario = Scenario(**r["scenario"])
    sets = self.target.make_timing_inputs(scenario, list(r["seeds"]))
    outs = []
    for trial in req["trials"]:  # the right outputs, made now
        inputs = sets[trial % len(sets)]
        self.target.refill_query(scenario, inputs, call_seed(r["rng_seed"], trial, "candidate"))
        outs.append(self.prepare(inputs)())
    metas, payload = channel.pack_tensors(outs)
    return {{"ok": True, "tensors": metas}}, payload


if argv[3] != "-":  # the candidate's worker, not the upstreams'
    worker.Worker.time = lazy_time
    worker.Worker.timed_outputs = lazy_outputs
from evals.harness.worker import startup
sys.exit(startup.main(argv))
'''


def _lazy_worker(tmp_path, monkeypatch, mode):
    script = tmp_path / "lazy_worker"
    script.write_text(LAZY_WORKER.format(python=sys.executable, root=str(ROOT), mode=mode))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(worker_client_module, "sys", SimpleNamespace(executable=str(script)))


@pytest.mark.parametrize(
    ("mode", "code", "why"),
    [
        ("all", Code.STALE_RESULT, "another output than the one its round committed to"),
        ("few", Code.TIMING_MISMATCH, "timed outputs, where the keep cap holds"),
    ],
)
def test_outputs_made_after_the_timing_round_are_rejected(tmp_path, monkeypatch, mode, code, why):
    # "all": it commits to the garbage it kept; "few": it says it kept a seventh of them
    _lazy_worker(tmp_path, monkeypatch, mode)
    settings = RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                           scenario_ids=("smoke-bf16-d64-s96-h4k2-causal",))  # fmt: skip
    result = evaluate(settings).results[0]
    assert result.failure is not None and result.failure.code == code, result.failure
    assert why in result.failure.reason
