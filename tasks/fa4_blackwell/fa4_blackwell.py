"""fa4_blackwell: a one-file CUDA attention kernel for Blackwell (B200) vs FlashAttention-4.

Not available yet: its harness target does not exist (no B200 is reachable to build and
measure it). The task exists so the name is stable; it refuses to start with a reason.

    inspect eval tasks/fa4_blackwell --model ...    # -> refuses: target not implemented
"""

from inspect_ai import Task, task

from evals.bench import TaskArgs, target_task, task_arguments
from evals.bench.registry import register_unqualified

TASK_VERSION = 0
TARGET = "fa4_blackwell"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def fa4_blackwell(args: TaskArgs) -> Task:
    """Refuses to start: the fa4_blackwell target is not implemented yet.

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, :data:`evals.bench.targets.FA4_BLACKWELL`, which says why it refuses.
    """
    return target_task(TARGET, args, version=TASK_VERSION)
