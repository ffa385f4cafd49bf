"""Every target's folder, found by discovery: ``evals/targets/<name>/target.toml``.

A target's folder holds all of it: the harness code (``target.py``, the class that
``target.toml``'s ``harness`` names, and its helpers), the suites (``suites/<suite>.json``
and the contract-scenario space ``suites/draw.json``), the contract and start kernel
(``kernel/``; the repository's ``kernels/<name>`` links here), the trivial kernel the symbol
check diffs against (``trivial.<ext>``), the scripted arm's ``recipe.yaml``, the autonomous
arm's ``context/`` notes, and ``target.toml``: the Inspect layer's descriptor (``[bench]``)
and the task's version history (``[[versions]]``, bumped when a change could move scores).
Adding a target is adding a folder, plus its user-facing entry points in the repository's
``tasks/<name>/`` and ``sandboxes/``. This module imports nothing heavy (no torch), so the
Inspect layer and a CPU machine can list targets without loading any target's code.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Cost", "HostIssueCaps", "TargetFolder", "Version", "target_folder", "target_folders"]

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Version:
    """One entry of a target's version history: the version and what changed."""

    number: int
    change: str


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What one harness run of the target costs its device (``[cost]`` of ``target.toml``).

    Attributes:
        smoke_s: Device seconds of one harness run (an agent's evaluation or the final
            score, build included) on the smoke suite.
        dev_s: The same on the dev suite.
        full_s: The same on the full suite.
        basis: Where the figures were measured (or how scaled from a measured one).
    """

    smoke_s: float
    dev_s: float
    full_s: float
    basis: str

    def run_s(self, suite: str) -> float:
        """Device seconds of one harness run on ``suite`` (``smoke``, ``dev`` or ``full``)."""
        seconds = {"smoke": self.smoke_s, "dev": self.dev_s, "full": self.full_s}
        if suite not in seconds:
            raise ValueError(f"unknown suite {suite!r} (known: {', '.join(seconds)})")
        return seconds[suite]


@dataclass(frozen=True, kw_only=True)
class HostIssueCaps:
    """How long a GPU call may take on the host, by launch path (``[host_issue]``).

    Device time hides a call's host work behind a spin, so host work must stay within what an
    honest launch path costs. Launch paths differ: a C++ candidate's call through its torch
    operator, FA3's Python interface, FA4's CuTe DSL dispatch. Whatever is judged as the
    candidate (a kernel, or an upstream in a self-check) gets its own path's cap; the
    judge's other terms follow the host's moment (:mod:`evals.harness.judging.host_issue`).

    Attributes:
        cap_us: Per launch path (``candidate`` for a C++ candidate, else an upstream's name),
            the median host issue time (microseconds) a call may always take.
        margin: The least ratio of each cap to the slowest median measured on its path
            (``benchmarks/host_issue_calibration.py`` checks the committed measurements).
        basis: Where the figures were measured.
    """

    cap_us: Mapping[str, float]
    margin: float
    basis: str


@dataclass(frozen=True, kw_only=True)
class TargetFolder:
    """One target's folder and its ``target.toml``.

    Attributes:
        name: The target's name (the folder's), also its task's.
        path: The folder.
        harness: ``module:Class`` of the harness target, the module relative to the folder's
            package (``target:Fa3Hopper`` is ``evals.targets.fa3_hopper.target``).
        bench: The ``[bench]`` table: the Inspect layer's descriptor fields.
        versions: The task's version history, oldest first.
        cost: What a run costs its device (None: not measured), for a study's plan.
        host_issue: GPU targets: the host issue caps by launch path (None on a CPU target).
    """

    name: str
    path: Path
    harness: str
    bench: Mapping[str, Any]
    versions: tuple[Version, ...]
    cost: Cost | None = None
    host_issue: HostIssueCaps | None = None

    @property
    def version(self) -> int:
        """The task's current version (the history's last)."""
        return self.versions[-1].number

    def file(self, *parts: str) -> Path:
        """The path of ``parts`` inside the folder, e.g. ``("suites", "dev.json")``."""
        return self.path.joinpath(*parts)

    @property
    def harness_module(self) -> str:
        """The importable module of the harness target."""
        return f"{__name__}.{self.name}.{self.harness.split(':')[0]}"

    @property
    def harness_class(self) -> str:
        """The harness target's class name."""
        return self.harness.split(":")[1]


def _load(path: Path) -> TargetFolder:
    with (path / "target.toml").open("rb") as f:
        doc = tomllib.load(f)
    versions = tuple(Version(int(v["version"]), str(v["change"])) for v in doc["versions"])
    numbers = [v.number for v in versions]
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"{path}/target.toml: versions must run 1, 2, ... (got {numbers})")
    if ":" not in doc["harness"]:
        raise ValueError(f"{path}/target.toml: harness must be 'module:Class'")
    cost = Cost(**doc["cost"]) if "cost" in doc else None
    host_issue = HostIssueCaps(**doc["host_issue"]) if "host_issue" in doc else None
    return TargetFolder(
        name=path.name,
        path=path,
        harness=doc["harness"],
        bench=doc["bench"],
        versions=versions,
        cost=cost,
        host_issue=host_issue,
    )


@functools.cache
def target_folders() -> dict[str, TargetFolder]:
    """Every target folder under this package, by name (sorted)."""
    found = sorted(p.parent for p in ROOT.glob("*/target.toml"))
    return {p.name: _load(p) for p in found}


def target_folder(name: str) -> TargetFolder:
    """The folder of the target called ``name``.

    Raises:
        KeyError: No target has that name (the message lists the known ones).
    """
    try:
        return target_folders()[name]
    except KeyError:
        known = ", ".join(target_folders())
        raise KeyError(f"unknown target {name!r} (known: {known})") from None
