"""cpu_attention: make a one-file C++ attention kernel faster than torch's CPU SDPA.

Measures the geometric-mean speedup of the agent's final kernel over torch SDPA on the full
CPU suite (secret seed), and whether every scenario is correct. Runs anywhere: no GPU needed.

    inspect eval tasks/cpu_attention --solver kernel_agent --model openai/gpt-5 --epochs 5
    inspect eval tasks/cpu_attention --solver evals/kernel_agent --model mockllm/model
    inspect eval tasks/cpu_attention -T sandbox=docker -T score_suite=dev --model ...
"""

from pathlib import Path
from typing import Literal

from inspect_ai import Task, task

from evals.bench import TaskSettings, kernel_task
from evals.bench.registry import register_unqualified

TASK_VERSION = 6  # 2: symbols read from the candidate's objects; dispatcher lookups forbidden;
# 3: a fresh q before every timed call (a cache keyed on input contents gained 9x);
# 4: unconverged timing re-timed once; one harness run at a time per device (a lock)
# 5: suites add seqlen_q != seqlen_k, lengths 1 and primes, non-default scales, large q/k
# symbol allow-list, preprocessor includes, no raw syscalls; a roofline floor (10x matmul);
# 6: one budget for every arm (evaluations; questions outside the agent's), verdict channel;
# upstreams timed in their own process; timed outputs checked at random; a suspicious
# speedup re-judged in a fresh process; fail fast
TARGET = "cpu_attention"
ROOT = Path(__file__).resolve().parents[2]

register_unqualified(__name__)


@task
def cpu_attention(
    *,
    suite: str = "dev",
    score_suite: str = "full",
    upstream: str = "sdpa",
    sandbox: Literal["local", "docker", "k8s"] = "local",
    attempts: int = 3,
    message_limit: int = 200,
    token_limit: int | None = None,
    time_limit: int | None = None,
    evaluations: int = 60,
    seed_offset: int = 0,
) -> Task:
    """The CPU attention task (default sandbox: local, since it needs no GPU or isolation)."""
    settings = TaskSettings(
        target=TARGET,
        suite=suite,
        score_suite=score_suite,
        upstream=upstream,
        sandbox=sandbox,
        attempts=attempts,
        message_limit=message_limit,
        token_limit=token_limit,
        time_limit=time_limit,
        evaluations=evaluations,
        seed_offset=seed_offset,
    )
    return kernel_task(settings, version=TASK_VERSION, root=ROOT)
