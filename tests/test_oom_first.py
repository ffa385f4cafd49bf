"""The candidate's worker is the out-of-memory killer's first choice (process_state.OOM_SCORE_ADJ):
memory it fills (a tmpfs counts against a container's) can cost its own process, never the
parent that writes the verdict."""

from pathlib import Path

from evals.harness import RunSettings, evaluate
from evals.harness.worker_link.process_state import OOM_SCORE_ADJ
from tests.helpers import START_CPU


def test_the_candidates_worker_goes_first_and_the_kernel_says_so():
    verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                   scenario_ids=("smoke-fp32-d64-s128-h4-full",)))
    assert verdict.status == "ok"
    assert verdict.protections is not None
    assert verdict.protections["oom_score_adj"] == OOM_SCORE_ADJ == 1000
    assert int(Path("/proc/self/oom_score_adj").read_text()) < OOM_SCORE_ADJ  # the parent's own
