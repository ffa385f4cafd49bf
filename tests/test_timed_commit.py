"""An audited timing round commits to every timed output it kept (less work cannot hide).

A candidate owning its worker could skip most timed calls, say it kept a few outputs and make
the chosen ones only when they are fetched, outside any clock. The round's answer now carries
a digest of each kept output, made inside the round; the parent holds it to them.
"""

from types import SimpleNamespace

import pytest
import torch

from evals.harness import Code
from evals.harness.clock_checks.digest import digests
from evals.harness.clock_checks.timed_commit import Commitment
from evals.harness.failures import Failure
from evals.harness.judging import judge_time as judge_module
from evals.harness.targets import get_target
from evals.harness.targets.guards import KEEP_TIMED_BYTES
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.channel import pack_tensors
from evals.harness.worker_link.session import Tally

SETTINGS = {"min_trials": 5, "max_trials": 100}
REQUEST = {"seeds": [1, 2, 3], "rng_seed": 9, "commit": True, "settings": SETTINGS}


def _outputs(n, numel=64):
    return [torch.full((numel,), float(i)) for i in range(n)]


def _answer(n=12, kept=None, outs=None):
    kept = list(range(n)) if kept is None else kept
    outs = _outputs(n) if outs is None else outs
    return {"trials": n, "kept": kept, "digests": digests([outs[t] for t in kept], 9)}


def test_an_honest_round_commits_to_every_kept_output():
    outs = _outputs(12)
    commitment = Commitment.read(REQUEST, _answer(outs=outs))
    assert isinstance(commitment, Commitment) and sorted(commitment.digests) == list(range(12))
    assert commitment.covers(outs[0]) is None
    assert all(commitment.holds(t, outs[t]) is None for t in range(12))


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({**_answer(), "digests": None}, "committed no digests for 12"),
        ({**_answer(), "digests": _answer()["digests"][:-1]}, "11 digests for 12"),
        ({**_answer(), "kept": [0, 0, *range(2, 12)]}, "repeat or fall outside"),
        ({**_answer(), "kept": [*range(11), 12]}, "repeat or fall outside"),
        ({**_answer(), "kept": [-1, *range(1, 12)]}, "repeat or fall outside"),
        ({**_answer(), "kept": [], "digests": []}, "kept none of its 12"),
        ({**_answer(), "kept": "0-11"}, "not a list of trial numbers"),
        ({**_answer(), "kept": [True, *range(1, 12)]}, "not a list of trial numbers"),
        ({**_answer(), "trials": 0}, "reported 0 timed calls"),
        ({**_answer(), "trials": None}, "reported None timed calls"),
        ({**_answer(), "trials": 4}, "outside the 5-100 it runs"),  # fewer than min_trials
        ({**_answer(), "trials": 101}, "outside the 5-100 it runs"),
    ],
)
def test_a_broken_commitment_is_a_timing_mismatch(answer, why):
    failure = Commitment.read(REQUEST, answer)
    assert isinstance(failure, Failure) and failure.code == Code.TIMING_MISMATCH
    assert why in failure.reason


def test_a_round_keeping_fewer_outputs_than_the_cap_allows_fails():
    # 40 timed calls, 6 kept: the other 34 could have skipped their work unseen
    outs = _outputs(40)
    commitment = Commitment.read(REQUEST, {**_answer(40, kept=[0, 7, 14, 21, 28, 35], outs=outs)})
    assert isinstance(commitment, Commitment)
    failure = commitment.covers(outs[0])
    assert failure is not None and failure.code == Code.TIMING_MISMATCH
    assert "kept 6 of its 40 timed outputs, where the keep cap holds 40" in failure.reason


def test_outputs_past_the_keep_cap_need_not_be_kept():
    # each output a little over a third of the cap: an honest worker keeps two of them
    big = torch.empty(KEEP_TIMED_BYTES // 3 // 4 + 1, dtype=torch.float32, device="meta")
    commitment = Commitment(trials=10, digests={3: "a", 8: "b"}, seed=9)
    assert commitment.covers(big) is None
    assert Commitment(trials=10, digests={3: "a"}, seed=9).covers(big) is not None


def test_an_output_other_than_the_committed_one_is_a_stale_result():
    outs = _outputs(12)
    commitment = Commitment.read(REQUEST, _answer(outs=outs))
    assert isinstance(commitment, Commitment)
    nudged = outs[5].clone()
    nudged[17] = torch.nextafter(nudged[17], torch.tensor(1e9))  # one ulp: still "accurate"
    failure = commitment.holds(5, nudged)
    assert failure is not None and failure.code == Code.STALE_RESULT
    assert "another output than the one its round committed to" in failure.reason


class _LazyWorker:
    """Commits to garbage in the round, then hands over other outputs when they are fetched."""

    def __init__(self, outs):
        self.outs, self.fetched = outs, []

    def request(self, header, timeout_s=None):
        self.fetched.append(header["trials"])
        metas, payload = pack_tensors([self.outs[t] for t in header["trials"]])
        return {"ok": True, "tensors": metas}, payload


def _session(client):
    target = get_target("cpu_attention")
    scenario = target.load_suite("smoke").scenarios[0]
    session = SimpleNamespace(seed=5, client=client, tally=Tally(), target=target)
    return session, ScenarioResult(scenario)


def test_the_parent_rejects_outputs_made_after_the_round(monkeypatch):
    n = 12
    garbage = _outputs(n)  # what the round had when it committed
    client = _LazyWorker([g + 1 for g in garbage])  # made later, outside the clock
    session, result = _session(client)
    failure = judge_module._check_timed(session, result, REQUEST, _answer(n, outs=garbage))
    assert client.fetched and failure is not None and failure.code == Code.STALE_RESULT
    assert "committed to" in failure.reason


def test_the_parent_checks_no_output_of_a_round_whose_commitment_is_broken():
    client = _LazyWorker(_outputs(12))
    session, result = _session(client)
    answer = {**_answer(), "digests": []}
    failure = judge_module._check_timed(session, result, REQUEST, answer)
    assert failure is not None and failure.code == Code.TIMING_MISMATCH and not client.fetched


def test_an_unaudited_round_is_checked_as_before_without_digests():
    client = _LazyWorker(_outputs(12))
    session, result = _session(client)
    request = {k: v for k, v in REQUEST.items() if k != "commit"}
    failure = judge_module._check_timed(session, result, request, {"kept": list(range(12))})
    # the fake outputs are not attention: the accuracy check, not a commitment, rejects them
    assert client.fetched and failure is not None and "committed" not in failure.reason
