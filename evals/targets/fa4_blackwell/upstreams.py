"""Upstreams of fa4_blackwell: FlashAttention-4 (CuTe DSL) and torch SDPA's cuDNN backend.

FA4 compiles one kernel per configuration on its first call (an in-process cache); the
harness's verification and warm-up calls precede every timed and latency figure, so the
compile lands in none of them; the verdict records it (``timing.first_call_ms``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch.nn.attention import SDPBackend

from evals.harness.scenarios import Scenario
from evals.harness.targets.base import Inputs, Upstream
from evals.targets.fa3_hopper.upstreams import TorchSdpa, dist_version, first_output

FA4_PIN = "flash-attn-4==4.0.0b36"


def import_fa4() -> tuple[ModuleType, str]:
    """Import FA4's interface, ``flash_attn.cute``, and its distribution's version.

    Raises:
        ImportError: FA4 (or its CuTe DSL) is not installed.
    """
    return importlib.import_module("flash_attn.cute"), dist_version("flash-attn-4")


class Fa4(Upstream):
    """FlashAttention-4 through ``flash_attn.cute``, default settings (``num_splits=1``).

    Dense calls go to ``flash_attn_func``; varlen to ``flash_attn_varlen_func`` with
    ``cu_seqlens_q/k``; a KV cache to ``flash_attn_varlen_func`` with ``seqused_k`` (its
    per-sequence lengths). FA4 has no append: for a call that appends, the new keys and values
    are written into the cache first (the positions from the lengths, one scatter each for k
    and v, the grown lengths: four small kernels inside the timed call, as a user of FA4 would
    have to run), then attention runs over the grown lengths.
    """

    name = "fa4"

    def __init__(self) -> None:
        self._module: ModuleType | None = None
        self._version = "not installed"
        self._error: str | None = None
        try:
            self._module, self._version = import_fa4()
        except Exception as exc:  # ImportError, or a broken CuTe DSL install
            self._error = f"FlashAttention-4 is not importable: {type(exc).__name__}: {exc}"

    def version(self) -> str:
        """Distribution name and version."""
        return self._version

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        """Only when FA4 cannot be imported, or for fp8 (FA4's forward here is bf16 only)."""
        if self._error is not None:
            return self._error
        if scenario.params.get("dtype") != "bfloat16":
            return "FA4 is run in bf16 only"
        return None

    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """Call ``flash_attn_func`` or ``flash_attn_varlen_func`` (see the class)."""
        if self._module is None:
            raise RuntimeError(self._error)
        return self._call(self._module, inputs)

    @staticmethod
    def _call(fa4: ModuleType, i: Inputs) -> Callable[[], torch.Tensor]:
        common = {"softmax_scale": i["softmax_scale"], "causal": i["causal"]}
        if "cu_seqlens" in i:
            cu, ms = i["cu_seqlens"], i["max_seqlen"]
            cu_k, ms_k = i.get("cu_seqlens_k", cu), i.get("max_seqlen_k", ms)
            return lambda: first_output(
                fa4.flash_attn_varlen_func(
                    i["q"], i["k"], i["v"], cu_seqlens_q=cu, cu_seqlens_k=cu_k,
                    max_seqlen_q=ms, max_seqlen_k=ms_k, **common,
                )
            )  # fmt: skip
        if "k_cache" in i:
            return _kvcache_call(fa4, i, common)
        return lambda: first_output(fa4.flash_attn_func(i["q"], i["k"], i["v"], **common))


def _kvcache_call(fa4: ModuleType, i: Inputs, common: dict[str, Any]) -> Callable[[], torch.Tensor]:
    # Lengths and positions are read from the inputs on every call, never kept from the first:
    # the harness refills an input set in place (new lengths in the same buffers) and checks
    # that the result follows (the self-check runs FA4 through the candidate's checks).
    q, k_cache, v_cache, lens = i["q"], i["k_cache"], i["v_cache"], i["cache_seqlens"]
    k_new, v_new = i.get("k_new"), i.get("v_new")
    if k_new is None or v_new is None:
        return lambda: first_output(
            fa4.flash_attn_varlen_func(q, k_cache, v_cache, seqused_k=lens, **common)
        )
    rows = k_new.shape[1]
    # row r of sequence b's new keys lands at cache position lens[b] + r
    batch = torch.arange(q.shape[0], device=lens.device, dtype=lens.dtype)[:, None]
    offsets = torch.arange(rows, device=lens.device, dtype=lens.dtype)[None, :]

    def run() -> torch.Tensor:
        position = lens[:, None] + offsets
        k_cache.index_put_((batch, position), k_new)
        v_cache.index_put_((batch, position), v_new)
        return first_output(
            fa4.flash_attn_varlen_func(q, k_cache, v_cache, seqused_k=lens + rows, **common)
        )

    return run


def fa4_upstreams() -> tuple[Upstream, ...]:
    """FA4 and cuDNN (through SDPA)."""
    return (Fa4(), TorchSdpa("cudnn", SDPBackend.CUDNN_ATTENTION))
