"""The upstreams are timed only while no process of the candidate is alive.

Whatever a candidate leaves behind after its calls (a queued kernel, a thread, a timer, an
OpenMP team spinning on the cores) dies with its process, so it cannot slow the upstreams'
timing and inflate its own speedup. The round audit's null rounds (CPU) run beside a
candidate process that is stopped (SIGSTOP), never running.
"""

from __future__ import annotations

from pathlib import Path

from evals.harness.pipeline.runner import RunSettings, evaluate
from evals.harness.worker_link.worker_client import WorkerClient
from tests.helpers import START_CPU


def test_no_candidate_process_lives_while_the_upstreams_are_timed(monkeypatch):
    clients: list[WorkerClient] = []
    timed: list[tuple[str, bool]] = []
    nulls: list[bool] = []
    start, request = WorkerClient.start, WorkerClient.request

    def spy_start(self):
        clients.append(self)
        return start(self)

    def candidate_alive():
        candidates = [c for c in clients if c.library is not None]
        return any(c.proc is not None and c.proc.poll() is None for c in candidates)

    def candidate_running():
        candidates = [c for c in clients if c.library is not None]
        live = [c for c in candidates if c.proc is not None and c.proc.poll() is None]
        tasks = [Path(f"/proc/{c.proc.pid}/task") for c in live]
        states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0]
                  for folder in tasks for t in folder.iterdir()]  # fmt: skip
        return any(state not in ("T", "t") for state in states)

    def spy_request(self, message, *args, **kwargs):
        if message.get("op") != "time":
            return request(self, message, *args, **kwargs)
        if message.get("null"):
            nulls.append(candidate_running())
            return request(self, message, *args, **kwargs)
        if not message.get("candidate"):
            timed.append(("upstreams", candidate_alive()))
            return request(self, message, *args, **kwargs)
        # a candidate round after a kill (a re-time) starts its fresh process itself
        answer = request(self, message, *args, **kwargs)
        timed.append(("candidate", candidate_alive()))
        return answer

    monkeypatch.setattr(WorkerClient, "start", spy_start)
    monkeypatch.setattr(WorkerClient, "request", spy_request)
    settings = RunSettings(command="bench", target="cpu_attention", kernel=START_CPU,
                           suite="smoke", seed=3)
    verdict = evaluate(settings)
    assert verdict.status == "ok", verdict.failure
    n = sum(not r.scenario.covering for r in verdict.results)  # covering rows: never timed
    upstream_rounds = [alive for who, alive in timed if who == "upstreams"]
    candidate_rounds = [alive for who, alive in timed if who == "candidate"]
    assert len(upstream_rounds) >= n and len(candidate_rounds) >= n
    assert not any(upstream_rounds), "an upstream was timed beside a live candidate process"
    assert all(candidate_rounds)
    assert len(nulls) >= len(candidate_rounds) and not any(nulls), "a null round beside a run"
    # every scenario still has its speedup, and the phases say where the time went; on a busy
    # host a contract scenario's times may be withheld (wall_check.withhold), never a study one's
    for r in verdict.results:
        if r.scenario.covering:
            continue
        withheld = r.scenario.contract and bool(r.timing.get("unverified"))
        assert r.speedup("sdpa") or withheld, (r.scenario.id, r.timing.get("unverified"))
    assert verdict.timing["time_upstreams_s"] > 0
