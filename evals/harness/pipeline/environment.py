"""What a run needs from the machine, checked before judging: one line when something is missing.

A CUDA target needs a CUDA GPU that torch can see, a CUDA toolkit (``nvcc``) to build a
candidate, and the upstream its accuracy rule is measured against (FlashAttention-3 or -4);
every build needs a C++ compiler. A missing piece is the machine's fault, not the candidate's:
the run ends with code ``environment`` and exit status 2 before any work, with what is missing
and how to supply it.
"""

from __future__ import annotations

import os
import shutil

import torch

from evals.harness.failures import Code, Failure
from evals.harness.targets.base import Target


def environment_fault(target: Target, *, building: bool) -> Failure | None:
    """Why this machine cannot judge on ``target``, or None when it can.

    Args:
        target: The target to judge on.
        building: Whether a candidate source will be compiled (not for an upstream self-check).
    """
    reason = _gpu(target) or (_compiler(target) if building else None) or _upstreams(target)
    return None if reason is None else Failure(Code.ENVIRONMENT, reason)


def _gpu(target: Target) -> str | None:
    if target.device != "cuda" or torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        why = f"this torch ({torch.__version__}) was built without CUDA"
    else:
        why = f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no device"
    return f"no CUDA GPU: {target.name} runs on an NVIDIA GPU and {why}"


def _compiler(target: Target) -> str | None:
    compiler = os.environ.get("CXX") or "c++"
    if shutil.which(compiler) is None:
        return f"no C++ compiler: {compiler!r} is not on PATH (install g++ or set CXX)"
    if not target.build.with_cuda:
        return None
    from torch.utils.cpp_extension import CUDA_HOME  # imports setuptools: only when building

    if CUDA_HOME is None or not os.path.isfile(os.path.join(CUDA_HOME, "bin", "nvcc")):
        return "no CUDA toolkit: nvcc not found (install it or set CUDA_HOME to its root)"
    return None


def _upstreams(target: Target) -> str | None:
    return target.missing_upstream()
