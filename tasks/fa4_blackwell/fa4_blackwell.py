"""fa4_blackwell: a one-file CUDA attention kernel for Blackwell (B200) vs FlashAttention-4.

Not available yet: its harness target does not exist (no B200 is reachable to build and
measure it). The task exists so the name is stable; it refuses to start with a reason.

    inspect eval tasks/fa4_blackwell --model ...    # -> refuses: target not implemented
"""

from inspect_ai import Task, task

from evals.bench.registry import register_unqualified
from evals.bench.task import TaskArgumentError

TASK_VERSION = 0

register_unqualified(__name__)


@task
def fa4_blackwell() -> Task:
    """Refuses to start: the fa4_blackwell target is not implemented yet."""
    raise TaskArgumentError(
        "fa4_blackwell is not available yet: the harness has no fa4_blackwell target "
        "(it needs a B200 and FlashAttention-4); use tasks/fa3_hopper or tasks/cpu_attention"
    )
