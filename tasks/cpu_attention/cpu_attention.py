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

TASK_VERSION = 11  # 2: symbols read from the candidate's objects; dispatcher lookups forbidden;
# 3: a fresh q before every timed call (a cache keyed on input contents gained 9x);
# 4: unconverged timing re-timed once; one harness run at a time per device (a lock)
# 5: suites add seqlen_q != seqlen_k, lengths 1 and primes, non-default scales, large q/k
# symbol allow-list, preprocessor includes, no raw syscalls; a roofline floor (10x matmul);
# 6: one budget for every arm (evaluations; questions outside the agent's), verdict channel;
# upstreams timed in their own process; timed outputs checked at random; a suspicious
# speedup re-judged in a fresh process; fail fast
# 7: the candidate's worker under a seccomp allow-list (no files written, no network, no new
# processes or threads); the parent's wall clock must agree with the reported times
# 8: the upstreams are timed after the candidate's process is killed (nothing it leaves
# behind can slow them), from the seeds of its own last round; wall-clock batches on the
# timed input sets; more standard and toolkit headers allowed (the contract lists them)
# 9: integrity III: wall-clock batches verified by the parent (digests, a random output), its
# own channel cost; writes confined to a private folder (Landlock) and a footprint check;
# contract scenarios drawn from the seed, a partial k/v rewrite probe, headline over study
# scenarios only; upstream outliers re-timed side by side; harness faults error the sample;
# steady_clock allowed; wall-clock batches flip each call's q inside the batch and are
# metered by the worker's CPU time (tolerance 2.5x)
# 10: a batch's digests are SHA-256 of each output's bytes (every bit bound; cheaper and as
# costly in the worker as in the parent's timing of them, which is taken on distinct copies)
# 11: a contract scenario whose wall-clock figure its reports do not explain has its speedups
# withheld instead of failing the run (honest few-key calls were rejected under load)
TARGET = "cpu_attention"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def cpu_attention(args: TaskArgs) -> Task:
    """The CPU attention task (default sandbox: local, since it needs no GPU or isolation).

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, :data:`evals.bench.targets.CPU_ATTENTION`.
    """
    return target_task(TARGET, args, version=TASK_VERSION)
