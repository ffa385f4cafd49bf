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

TASK_VERSION = 12  # 2: symbol and GPU trace checks on; 3: one trace session after all timing;
# 4: roofline floors allow 1.25x the measured ceilings (upstreams beat the copy rate);
# 5: device time (host issue work hidden behind a spin) instead of host-inclusive time:
# start.cu 0.285x -> 0.179x FA3 on dev; host issue cap; a fresh q before every timed call;
# unconverged timing re-timed once; one harness run at a time per device (a lock)
# 6: symbol allow-list, preprocessor includes, no raw syscalls; contract scenarios added to
# every suite (bottom-right causal, primes, scales, varlen k lengths, fp8 descales, appends);
# 7: one budget for every arm (evaluations; questions outside the agent's), verdict channel;
# upstreams timed in their own process; timed outputs checked at random; a suspicious
# speedup re-judged in a fresh process; trace on exact kernel identities; fail fast
# 8: the candidate's worker under a seccomp allow-list (no network, no new processes); the
# parent's wall clock must agree with the reported times; the trace profiles three timed-like
# calls per scenario and their device time must agree with the timed median
# 9: the upstreams are timed after the candidate's process is killed (nothing it leaves
# behind can slow them), from the seeds of its own last round; wall-clock batches on the
# timed input sets; more standard and toolkit headers allowed (the contract lists them)
# 10: integrity III: wall-clock batches verified by the parent (digests, a random output), its
# own channel cost, allowance per request not per call; writes confined to a private folder
# (Landlock) and a footprint check; contract scenarios drawn from the seed, a partial k/v
# rewrite probe, headline over the 26/182 study scenarios only; upstream outliers re-timed
# side by side; TMA through the driver's tensor-map encoders, events and clocks allowed;
# host-issue cap 400 us; harness faults error the sample; wall-clock batches flip each
# call's q inside the batch
# 11: a batch's digests are SHA-256 of exact integer sums over runs of each output (every
# bit of a run bound, no float summation order), timed by the parent on distinct copies
# (one output repeated sat in L2 and rejected FA3 itself on 67 MB prefill outputs)
# 12: a contract scenario whose wall-clock figure its reports do not explain has its speedups
# withheld instead of failing the run
TARGET = "fa3_hopper"

register_unqualified(__name__)


@task
@task_arguments(TARGET)
def fa3_hopper(args: TaskArgs) -> Task:
    """The Hopper task, scored against FA3 (or ``cudnn``, ``fa2``, ``fastest``).

    Args:
        args: The ``-T`` arguments (:class:`evals.bench.TaskArgs`); defaults from the target's
            descriptor, :data:`evals.bench.targets.FA3_HOPPER`.
    """
    return target_task(TARGET, args, version=TASK_VERSION)
