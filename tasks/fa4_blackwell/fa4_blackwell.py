"""fa4_blackwell: make a one-file CUDA attention kernel for Blackwell faster than FlashAttention-4.

Measures the geometric-mean speedup of the agent's final kernel over FA4 on the 126 study
scenarios of the full suite (fa3_hopper's less fp8 and head dims above 128; secret seed), after
the agent worked on the dev suite; 0 if any scenario fails. Needs a B200 and FlashAttention-4;
on an H100/H200, ``KERNELSEEK_FA4_ARCH=sm_90a`` makes it a dry run (built for sm_90a, FA4's
SM90 path), whose figures are marked "dry run on sm_90, not a Blackwell measurement".

    inspect eval tasks/fa4_blackwell --solver kernelseek --model openai/gpt-5 --epochs 5
    KERNELSEEK_FA4_ARCH=sm_90a inspect eval tasks/fa4_blackwell -T sandbox=local --model ...
"""

from inspect_ai import Task, task

from evals.bench import TaskArgs, target_task, task_arguments
from evals.bench.registry import register_unqualified

TARGET = "fa4_blackwell"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def fa4_blackwell(args: TaskArgs) -> Task:
    """The Blackwell task, scored against FA4 (or ``cudnn``, ``fastest``).

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, ``evals/targets/fa4_blackwell/target.toml``.
    """
    return target_task(TARGET, args)
