"""The ``fa4_blackwell`` target: a one-file CUDA attention kernel for Blackwell vs FlashAttention-4.

Contract: ``kernels/fa4_blackwell/CONTRACT.md`` (fa3_hopper's operators and accuracy rule, bf16
only, built for ``sm_100a``). Suites: fa3_hopper's less fp8 and head dims above 128
(``scripts/make_fa4_suites.py``; 18 study-shaped dev and 126 full scenarios). Upstreams:
FlashAttention-4 (the headline) and cuDNN. The problem (inputs, reference, work) is
fa3_hopper's.

A dry run on Hopper: with ``KERNELSEEK_FA4_ARCH=sm_90a`` the candidate is built for ``sm_90a``
and FA4 runs its SM90 path; everything else is as on Blackwell, and every verdict says so
(:meth:`Fa4Blackwell.describe_device`). Figures from a dry run are not Blackwell measurements.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.targets.base import AccuracyRule
from evals.targets.fa3_hopper.target import (
    Fa3Hopper,
)
from evals.targets.fa4_blackwell.upstreams import FA4_PIN, fa4_upstreams, import_fa4

Arch = Literal["sm_100a", "sm_90a"]
ARCH_ENV = "KERNELSEEK_FA4_ARCH"
DRY_RUN_NOTE = "dry run on sm_90, not a Blackwell measurement"


def arch_from_env() -> Arch:
    """The architecture a run builds for: ``KERNELSEEK_FA4_ARCH``, default ``sm_100a``.

    Raises:
        HarnessInputError: The variable names another architecture.
    """
    value = os.environ.get(ARCH_ENV, "sm_100a")
    if value == "sm_100a":
        return "sm_100a"
    if value == "sm_90a":
        return "sm_90a"
    raise HarnessInputError(
        Failure(Code.BAD_ARGUMENT, f"{ARCH_ENV}={value!r}: use sm_100a (Blackwell) or sm_90a")
    )


class Fa4Blackwell(Fa3Hopper):
    """Attention forward on Blackwell (sm_100a), or its Hopper dry run: bf16 only."""

    def __init__(self, arch: Arch | None = None) -> None:
        """Built for ``arch``; default: ``KERNELSEEK_FA4_ARCH`` (:func:`arch_from_env`)."""
        self.arch: Arch = arch_from_env() if arch is None else arch
        super().__init__(
            name="fa4_blackwell",
            arch=self.arch,
            accuracy=AccuracyRule(baseline="fa4", floors={"bfloat16": 2e-3}),
            upstreams=fa4_upstreams(),
        )

    def missing_upstream(self) -> str | None:
        """Why FA4, the accuracy baseline, cannot be imported here, or None."""
        try:
            import_fa4()
        except Exception as exc:  # ImportError, or a broken CuTe DSL install
            return f"no FlashAttention-4: {type(exc).__name__}: {exc} (pip install {FA4_PIN})"
        return None

    def describe_device(self) -> dict[str, Any]:
        """GPU name, SMs, L2, memory, driver; the architecture built for; a dry run's note."""
        info: dict[str, Any] = dict(super().describe_device())
        info["arch"] = self.arch
        if self.arch != "sm_100a":
            info["note"] = DRY_RUN_NOTE
        return info
