"""fa3_hopper: make a one-file CUDA attention kernel for Hopper faster than FlashAttention-3.

Measures the geometric-mean speedup of the agent's final kernel over FA3 on the 182-scenario
full suite (dense, GQA, fp8, varlen, KV-cache; secret seed), after the agent worked on the
26-scenario dev suite; 0 if any scenario fails. Needs an H100/H200.

    inspect eval tasks/fa3_hopper --solver kernelseek --model anthropic/claude-opus-4-1 --epochs 5
    inspect eval tasks/fa3_hopper --solver evals/kernel_agent --model openai/gpt-5
    inspect eval tasks/fa3_hopper -T sandbox=local --model ...     # GPU host without Docker
"""

from inspect_ai import Task, task

from evals.bench import TaskArgs, target_task, task_arguments
from evals.bench.registry import register_unqualified

TARGET = "fa3_hopper"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def fa3_hopper(args: TaskArgs) -> Task:
    """The Hopper task, scored against FA3 (or ``cudnn``, ``fa2``, ``fastest``).

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, ``evals/targets/fa3_hopper/target.toml``.
    """
    return target_task(TARGET, args)
