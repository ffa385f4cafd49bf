"""fa3_hopper: make a one-file CUDA attention kernel for Hopper faster than FlashAttention-3.

Measures the geometric-mean speedup of the agent's final kernel over FA3 on the 182-scenario
full suite (dense, GQA, fp8, varlen, KV-cache; secret seed), after the agent worked on the
26-scenario dev suite; 0 if any scenario fails. Needs an H100/H200.

    inspect eval tasks/fa3_hopper --solver kernelseek --model anthropic/claude-opus-4-1 --epochs 5
    inspect eval tasks/fa3_hopper --solver evals/kernel_agent --model openai/gpt-5
    inspect eval tasks/fa3_hopper -T sandbox=local --model ...     # GPU host without Docker
"""

from pathlib import Path
from typing import Literal

from inspect_ai import Task, task

from evals.bench import TaskSettings, kernel_task
from evals.bench.registry import register_unqualified

TASK_VERSION = 7  # 2: symbol and GPU trace checks on; 3: one trace session after all timing;
# 4: roofline floors allow 1.25x the measured ceilings (upstreams beat the copy rate);
# 5: device time (host issue work hidden behind a spin) instead of host-inclusive time:
# start.cu 0.285x -> 0.179x FA3 on dev; host issue cap; a fresh q before every timed call;
# unconverged timing re-timed once; one harness run at a time per device (a lock)
# 6: symbol allow-list, preprocessor includes, no raw syscalls; contract scenarios added to
# every suite (bottom-right causal, primes, scales, varlen k lengths, fp8 descales, appends);
# 7: one budget for every arm (evaluations; questions outside the agent's), verdict channel;
# upstreams timed in their own process; timed outputs checked at random; a suspicious
# speedup re-judged in a fresh process; trace on exact kernel identities; fail fast
TARGET = "fa3_hopper"
ROOT = Path(__file__).resolve().parents[2]

register_unqualified(__name__)


@task
def fa3_hopper(
    *,
    suite: str = "dev",
    score_suite: str = "full",
    upstream: str = "fa3",
    sandbox: Literal["local", "docker", "k8s"] = "docker",
    attempts: int = 3,
    message_limit: int = 400,
    token_limit: int | None = None,
    time_limit: int | None = None,
    evaluations: int = 60,
    seed_offset: int = 0,
) -> Task:
    """The Hopper task, scored against FA3 (or ``cudnn``, ``fa2``, ``fastest``)."""
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
