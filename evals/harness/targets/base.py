"""What a target is: device, suites, contract, build, reference, upstreams, accuracy rule."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.measurement.gpu import Ceilings
from evals.harness.measurement.timing import Timer, TimingSettings
from evals.harness.scenarios import Scenario, Suite, load_suite
from evals.harness.targets.draw_space import DrawSpace
from evals.harness.targets.guards import MutationCheck
from evals.harness.targets.source_policy import SourcePolicy
from evals.targets import HostIssueCaps, target_folder

DeviceKind = Literal["cpu", "cuda"]
Inputs = Mapping[str, Any]
"""One input set: tensors and scalars, keyed by argument name."""


@dataclass(frozen=True)
class Contract:
    """The candidate contract.

    Attributes:
        namespace: The torch operator namespace the candidate registers (``TORCH_LIBRARY(ns, m)``).
        entry_points: Operator name to its exact schema string.
        source_suffix: File suffix of the single candidate source file.
        document: Repository path of the human-readable contract.

    """

    namespace: str
    entry_points: Mapping[str, str]
    source_suffix: str
    document: str


@dataclass(frozen=True)
class BuildSpec:
    """How a candidate is compiled through ``torch.utils.cpp_extension``."""

    extra_cflags: tuple[str, ...] = ("-O3",)
    extra_ldflags: tuple[str, ...] = ()
    extra_cuda_cflags: tuple[str, ...] = ()
    with_cuda: bool = False
    timeout_s: float = 300.0

    def to_json(self) -> dict[str, Any]:
        """JSON form; part of the build cache key."""
        return {
            "extra_cflags": list(self.extra_cflags),
            "extra_ldflags": list(self.extra_ldflags),
            "extra_cuda_cflags": list(self.extra_cuda_cflags),
            "with_cuda": self.with_cuda,
        }


@dataclass(frozen=True)
class WorkerLimits:
    """Limits applied to the worker process that runs the candidate.

    Attributes:
        call_timeout_s: Seconds one request (a verification run or a timing loop) may take.
        memory_limit_bytes: Address-space limit of the worker (CPU targets), or None.
        threads: Intra-op threads for candidate and upstream; None uses every allowed CPU.

    """

    call_timeout_s: float = 60.0
    memory_limit_bytes: int | None = None
    threads: int | None = None


@dataclass(frozen=True)
class AccuracyRule:
    """FlashAttention's test rule.

    A candidate's max abs error against the float64 reference may be at most
    ``upstream_factor`` times the error of ``baseline`` (an upstream, same precision, same
    inputs) plus an absolute floor for the output dtype.
    """

    baseline: str
    floors: Mapping[str, float]
    upstream_factor: float = 2.0

    def tolerance(
        self, dtype: str, baseline_error: float, value_scale: float = 1.0, rounding: float = 0.0
    ) -> float:
        """Allowed max abs error for ``dtype`` given the baseline's max abs error.

        The floor is in units of the values' scale (``value_scale``: the standard deviation of
        v, 1 in every fixed scenario): an output of 1e20 cannot be held to 1e-5 absolute.
        ``rounding`` is added as it is: what rounding the scores moves an honest output by on
        the scenario (:meth:`Target.score_rounding`).
        """
        floor = self.floors[dtype] * value_scale + rounding
        return self.upstream_factor * baseline_error + floor


@dataclass(frozen=True)
class OutputSpec:
    """What the candidate must return for one scenario."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str


@dataclass(frozen=True)
class Work:
    """The work one call does: floating-point operations and bytes moved (inputs + output)."""

    flops: float
    bytes: float


class Upstream(ABC):
    """An upstream implementation the candidate is measured against."""

    name: str

    @abstractmethod
    def version(self) -> str:
        """Version string for provenance."""

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        """Why this upstream cannot run ``scenario``, or None when it can."""
        return None

    @abstractmethod
    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """Return a zero-argument callable computing the output for ``inputs``."""


@dataclass
class Target(ABC):
    """A target: everything the harness needs to judge candidates for one kind of kernel."""

    name: str
    device: DeviceKind
    contract: Contract
    build: BuildSpec
    accuracy: AccuracyRule
    timing: TimingSettings
    limits: WorkerLimits
    suite_names: tuple[str, ...] = ("smoke", "dev", "full")
    inputs_per_scenario: int = 3
    upstreams: tuple[Upstream, ...] = field(default_factory=tuple)
    policy: SourcePolicy | None = None
    host_issue: HostIssueCaps | None = None
    """GPU: the host issue caps by launch path (:mod:`evals.harness.judging.host_issue`)."""

    def load_suite(self, name: str) -> Suite:
        """Load one of this target's suites by name."""
        if name not in self.suite_names:
            known = ", ".join(self.suite_names)
            raise HarnessInputError(
                Failure(
                    Code.UNKNOWN_SUITE, f"unknown suite {name!r} for {self.name} (known: {known})"
                )
            )
        return load_suite(target_folder(self.name).file("suites", f"{name}.json"), name)

    def missing_upstream(self) -> str | None:
        """Why this machine lacks an upstream the target cannot judge without, or None.

        The accuracy baseline is one: a GPU target overrides this with an import check.
        """
        return None

    def upstream(self, name: str) -> Upstream:
        """Return the upstream called ``name``."""
        for up in self.upstreams:
            if up.name == name:
                return up
        raise KeyError(name)

    @abstractmethod
    def make_inputs(self, scenario: Scenario, seed: int) -> Inputs:
        """Deterministic random inputs for ``scenario`` from ``seed`` (bitwise reproducible)."""

    def draw_contract(self, space: DrawSpace) -> tuple[str, dict[str, Any]]:
        """One contract scenario drawn from ``space``: a short id part and its parameters.

        Targets with a draw file (``evals/targets/<name>/suites/draw.json``) implement it; see
        :mod:`evals.harness.contract.contract_draw`.
        """
        raise NotImplementedError(f"target {self.name!r} draws no contract scenarios")

    def rewrite_kv_part(self, scenario: Scenario, inputs: Inputs, seed: int) -> None:
        """Rewrite a few rows of one KV head of k and v in place, from ``seed``.

        The partial-rewrite probe: a cache keyed on a sample of k and v must miss. Positions
        and values come from ``seed``; deterministic, so the parent rebuilds the same edit.
        """
        raise NotImplementedError(f"target {self.name!r} cannot rewrite its keys in place")

    def heads(self, scenario: Scenario) -> tuple[int, int] | None:
        """(query heads, KV heads) where :meth:`head_block` can cut the inputs, else None."""
        return None

    def head_block(self, scenario: Scenario, inputs: Inputs, kv: slice) -> tuple[Scenario, Inputs]:
        """``scenario`` and ``inputs`` restricted to the KV heads ``kv`` and their query heads.

        Views, not copies; query head ``i`` belongs to KV head ``i // group``. The sampled
        integrity checks (:mod:`evals.harness.verification.sampled_check`) compute their float64
        reference on it. Targets whose :meth:`heads` is not None implement it.
        """
        raise NotImplementedError(f"target {self.name!r} cannot cut its inputs by heads")

    def score_rounding(self, scenario: Scenario) -> float:
        """Absolute error the float32 rounding of the scores may add to an honest output.

        0 unless the target models it (its contract draws scores far from unit size).
        """
        return 0.0

    def value_scale(self, scenario: Scenario) -> float:
        """The standard deviation of the scenario's values (v): the accuracy floor's unit."""
        return 1.0

    @abstractmethod
    def expected_output(self, scenario: Scenario) -> OutputSpec:
        """Shape, dtype and device the candidate must return."""

    @abstractmethod
    def prepare_candidate(self, ops: Any, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """Return a zero-argument callable invoking the candidate's entry point(s).

        Args:
            ops: ``torch.ops.<namespace>`` after the candidate library is loaded.
            inputs: One input set from :meth:`make_inputs`.

        """

    def mutable_inputs(self, scenario: Scenario) -> Collection[str] | Mapping[str, MutationCheck]:
        """Inputs the contract lets the candidate modify (e.g. a KV cache it appends to).

        A mapping gives, per input, the check of its contents after the call (what the
        contract says the modification must be); names alone are not checked.
        """
        return frozenset()

    def make_timing_inputs(self, scenario: Scenario, seeds: list[int]) -> list[Inputs]:
        """Input sets rotated through the timed calls, one per seed."""
        return [self.make_inputs(scenario, seed) for seed in seeds]

    def refill_query(self, scenario: Scenario, inputs: Inputs, seed: int) -> None:
        """Overwrite ``inputs['q']`` in place with fresh values drawn from ``seed``.

        Needed by targets whose timing settings ask for ``fresh_queries``; deterministic, so
        the parent can rebuild the inputs of a timed call to check its output.
        """
        raise NotImplementedError(f"target {self.name!r} cannot refill its queries")

    @abstractmethod
    def reference(self, scenario: Scenario, inputs: Inputs) -> torch.Tensor:
        """The float64 reference output for ``inputs``."""

    @abstractmethod
    def work(self, scenario: Scenario) -> Work:
        """FLOPs and bytes of one call, for TFLOP/s and GB/s."""

    @abstractmethod
    def timer(self) -> Timer:
        """The timer used inside the worker (CPU: perf counter; CUDA: events with L2 flush)."""

    def describe_device(self) -> dict[str, Any]:
        """Device facts for provenance (name, driver, clocks where known)."""
        return {}

    def device_key(self) -> str:
        """The device runs are serialised on: the CPU here.

        Its lock: :mod:`evals.harness.measurement.device_lock`.
        """
        return "cpu"

    def device_state(self) -> dict[str, Any]:
        """Clocks and temperature now (logged before and after a run); empty when unknown."""
        return {}

    def measure_ceilings(self) -> Ceilings | None:
        """Measured compute and bandwidth ceilings for roofline floors, or None (no floors)."""
        return None

    def floor_us(self, scenario: Scenario, ceilings: Ceilings) -> float | None:
        """The least plausible time of one call (microseconds), or None."""
        return None
