"""One descriptor per target: everything the Inspect layer knows about it.

Each descriptor is read from its target's folder (``evals/targets/<name>/target.toml``, the
``[bench]`` table; see :mod:`evals.targets`), where the target's contract, start kernel, recipe
and context notes also live. The harness's own :class:`evals.harness.targets.Target` (scenarios,
suites, upstreams, build) is found by the same name through :func:`evals.harness.get_target`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Literal

from evals.bench.config.task_args import TaskArgs
from evals.data import resource
from evals.targets import TargetFolder, target_folders

__all__ = ["TARGETS", "BenchTarget", "bench_target"]


@dataclass(frozen=True, kw_only=True)
class BenchTarget:
    """A target as the Inspect layer sees it.

    Attributes:
        name: The harness target's name, which is also the task's.
        device: ``cpu`` or ``gpu`` (the autonomous arm's ``profile`` adds ncu on GPUs).
        language: The kernel's language, as prompts name it.
        kernel_file: The candidate's file in the agent's working directory.
        sandbox_folder: ``sandboxes/<folder>/compose.yaml`` (docker) and
            ``sandboxes/k8s/values-<folder>.yaml`` (k8s).
        goal: The prompt's opening; ``{kernel}`` stands for the kernel file.
        defaults: The task's argument defaults: work and score suites, the default upstream,
            sandbox, budget.
        folder: The target's folder, where its files are.
        start_kernel: The start kernel's file name in ``kernels/<name>/`` (None: none yet).
        unavailable: Why the task refuses to start (one line), or None when it runs.
    """

    name: str
    device: Literal["cpu", "gpu"]
    language: Literal["C++", "CUDA"]
    kernel_file: str
    sandbox_folder: str
    goal: str
    defaults: TaskArgs
    folder: TargetFolder
    start_kernel: str | None = None
    unavailable: str | None = None

    @property
    def upstream(self) -> str:
        """The upstream the score is against unless ``-T upstream`` says otherwise."""
        return self.defaults.upstream

    def contract(self) -> Traversable:
        """The target's ``CONTRACT.md`` (``kernels/<name>/`` links to its folder)."""
        return self.folder.file("kernel", "CONTRACT.md")

    def start(self) -> Traversable:
        """The packaged start kernel.

        Raises:
            FileNotFoundError: The target has no start kernel yet.
        """
        if self.start_kernel is None:
            raise FileNotFoundError(f"{self.name} has no start kernel yet")
        return self.folder.file("kernel", self.start_kernel)

    def recipe(self) -> Traversable:
        """The scripted arm's default recipe."""
        return self.folder.file("recipe.yaml")

    def context(self) -> Traversable:
        """The folder of notes the autonomous arm gives the agent in ``docs/``."""
        return self.folder.file("context")

    def task_file(self) -> Traversable:
        """The packaged Inspect task file, ``tasks/<name>/<name>.py``."""
        return resource("tasks", self.name, f"{self.name}.py")


def _descriptor(folder: TargetFolder) -> BenchTarget:
    bench = dict(folder.bench)
    defaults = TaskArgs(**bench.pop("defaults", {}))
    return BenchTarget(name=folder.name, defaults=defaults, folder=folder, **bench)


TARGETS: dict[str, BenchTarget] = {n: _descriptor(f) for n, f in target_folders().items()}


def bench_target(name: str) -> BenchTarget:
    """The descriptor called ``name``.

    Raises:
        KeyError: No target has that name (the message lists the known ones).
    """
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r} (known: {', '.join(TARGETS)})") from None
