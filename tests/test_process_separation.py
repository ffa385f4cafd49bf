"""Upstreams are timed in a worker that never loads the candidate: nothing a candidate does in
its own process (re-registering operators, changing the thread pool, patching libraries) can
slow them down."""

from evals.harness import RunSettings, evaluate
from evals.harness.worker_link.worker_client import WorkerClient
from tests.helpers import START_CPU


def test_the_candidate_and_the_upstreams_are_timed_in_different_processes(monkeypatch):
    seen = []
    original = WorkerClient.request

    def spy(self, header, timeout_s=None):
        answer, payload = original(self, header, timeout_s)
        if header.get("op") == "time":
            pid = self.proc.pid if self.proc else None
            seen.append((self.library, pid, header["candidate"], tuple(header["upstreams"]),
                         tuple(answer["stats"])))
        return answer, payload

    monkeypatch.setattr(WorkerClient, "request", spy)
    verdict = evaluate(RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                                   scenario_ids=("smoke-bf16-d64-s96-h4k2-causal",)))
    assert verdict.status == "ok", verdict.to_json()["failure"]
    candidate = [s for s in seen if s[2]]
    upstream = [s for s in seen if not s[2] and s[4] != ("null",)]
    null = [s for s in seen if s[4] == ("null",)]  # the round audit's, with no kernel
    assert candidate and upstream and null
    assert all(s[0] is None and s[3] == () for s in null)  # in the upstreams' worker
    assert all(s[0] is not None and s[3] == () and s[4] == ("candidate",) for s in candidate)
    assert all(s[0] is None and s[3] == ("sdpa",) and s[4] == ("sdpa",) for s in upstream)
    assert {s[1] for s in candidate}.isdisjoint({s[1] for s in upstream})  # two processes
    assert set(verdict.results[0].times) == {"candidate", "sdpa"}


def test_check_starts_no_upstream_worker(monkeypatch):
    started = []
    original = WorkerClient.start

    def spy(self):
        started.append(self.library)
        return original(self)

    monkeypatch.setattr(WorkerClient, "start", spy)
    verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                   scenario_ids=("smoke-bf16-d64-s96-h4k2-causal",)))
    assert verdict.status == "ok" and len(started) == 1 and started[0] is not None
