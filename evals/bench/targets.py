"""One descriptor per target: everything the Inspect layer knows about it.

The harness's own :class:`evals.harness.targets.Target` (scenarios, suites, upstreams, build)
is found by the same name through :func:`evals.harness.get_target`. Adding a target to the
Inspect layer is one :class:`BenchTarget` entry here plus its data: ``kernels/<name>/``
(contract and start kernel), ``tasks/<name>/<name>.py``, ``evals/data/recipes/<name>.yaml``,
``evals/data/context/<name>/`` and its sandbox folder under ``sandboxes/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Literal

from evals.bench.task_args import TaskArgs
from evals.data import resource

__all__ = ["CPU_ATTENTION", "FA3_HOPPER", "FA4_BLACKWELL", "TARGETS", "BenchTarget", "bench_target"]


@dataclass(frozen=True, kw_only=True)
class BenchTarget:
    """A target as the Inspect layer sees it.

    Attributes:
        name: The harness target's name, which is also the task's.
        device: ``cpu`` or ``gpu`` (the autonomous arm's ``profile`` adds ncu on GPUs).
        language: The kernel's language, as prompts name it.
        kernel_file: The candidate's file in the agent's working directory.
        start_kernel: The start kernel's file name in ``kernels/<name>/`` (None: none yet).
        sandbox_folder: ``sandboxes/<folder>/compose.yaml`` (docker) and
            ``sandboxes/k8s/values-<folder>.yaml`` (k8s).
        goal: The prompt's opening; ``{kernel}`` stands for the kernel file.
        defaults: The task's argument defaults: work and score suites, the default upstream,
            sandbox, budget.
        unavailable: Why the task refuses to start (one line), or None when it runs.
    """

    name: str
    device: Literal["cpu", "gpu"]
    language: Literal["C++", "CUDA"]
    kernel_file: str
    start_kernel: str | None
    sandbox_folder: str
    goal: str
    defaults: TaskArgs
    unavailable: str | None = None

    @property
    def upstream(self) -> str:
        """The upstream the score is against unless ``-T upstream`` says otherwise."""
        return self.defaults.upstream

    def contract(self) -> Traversable:
        """The packaged ``kernels/<name>/CONTRACT.md``."""
        return resource("kernels", self.name, "CONTRACT.md")

    def start(self) -> Traversable:
        """The packaged start kernel.

        Raises:
            FileNotFoundError: The target has no start kernel yet.
        """
        if self.start_kernel is None:
            raise FileNotFoundError(f"{self.name} has no start kernel yet")
        return resource("kernels", self.name, self.start_kernel)

    def recipe(self) -> Traversable:
        """The scripted arm's default recipe."""
        return resource("recipes", f"{self.name}.yaml")

    def context(self) -> Traversable:
        """The folder of notes the autonomous arm gives the agent in ``docs/``."""
        return resource("context", self.name)

    def task_file(self) -> Traversable:
        """The packaged Inspect task file, ``tasks/<name>/<name>.py``."""
        return resource("tasks", self.name, f"{self.name}.py")


CPU_ATTENTION = BenchTarget(
    name="cpu_attention",
    device="cpu",
    language="C++",
    kernel_file="kernel.cpp",
    start_kernel="start.cpp",
    sandbox_folder="cpu",
    goal="Make the C++ attention kernel in `{kernel}` as fast as possible on this "
    "CPU, faster than torch's scaled_dot_product_attention, while staying correct.",
    defaults=TaskArgs(upstream="sdpa", sandbox="local", message_limit=200),
)

FA3_HOPPER = BenchTarget(
    name="fa3_hopper",
    device="gpu",
    language="CUDA",
    kernel_file="kernel.cu",
    start_kernel="start.cu",
    sandbox_folder="hopper",
    goal="Make the CUDA attention kernel in `{kernel}` as fast as possible on this "
    "Hopper GPU, faster than FlashAttention-3, while staying correct.",
    defaults=TaskArgs(upstream="fa3", sandbox="docker", message_limit=400),
)

FA4_BLACKWELL = BenchTarget(
    name="fa4_blackwell",
    device="gpu",
    language="CUDA",
    kernel_file="kernel.cu",
    start_kernel=None,
    sandbox_folder="blackwell",
    goal="Make the CUDA attention kernel in `{kernel}` as fast as possible on this "
    "Blackwell GPU, faster than FlashAttention-4, while staying correct.",
    defaults=TaskArgs(upstream="fa4", sandbox="docker", message_limit=400),
    unavailable="fa4_blackwell is not available yet: the harness has no fa4_blackwell target "
    "(it needs a B200 and FlashAttention-4); use tasks/fa3_hopper or tasks/cpu_attention",
)

TARGETS: dict[str, BenchTarget] = {t.name: t for t in (CPU_ATTENTION, FA3_HOPPER, FA4_BLACKWELL)}


def bench_target(name: str) -> BenchTarget:
    """The descriptor called ``name``.

    Raises:
        KeyError: No target has that name (the message lists the known ones).
    """
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r} (known: {', '.join(TARGETS)})") from None
