"""cpu_attention: make a one-file C++ attention kernel faster than torch's CPU SDPA.

Measures the geometric-mean speedup of the agent's final kernel over torch SDPA on the full
CPU suite (secret seed), and whether every scenario is correct. Runs anywhere: no GPU needed.

    inspect eval tasks/cpu_attention --solver kernel_agent --model openai/gpt-5 --epochs 5
    inspect eval tasks/cpu_attention --solver evals/kernel_agent --model mockllm/model
    inspect eval tasks/cpu_attention -T sandbox=docker -T score_suite=dev --model ...
"""

from inspect_ai import Task, task

from evals.bench import TaskArgs, target_task, task_arguments
from evals.bench.registry import register_unqualified

TARGET = "cpu_attention"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def cpu_attention(args: TaskArgs) -> Task:
    """The CPU attention task (default sandbox: local, since it needs no GPU or isolation).

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, ``evals/targets/cpu_attention/target.toml``.
    """
    return target_task(TARGET, args)
