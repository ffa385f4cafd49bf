"""Upstreams of fa3_hopper: FlashAttention-3, and torch SDPA with the cuDNN and flash backends."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from evals.harness.scenarios import Scenario
from evals.harness.targets.base import Inputs, Upstream
from evals.targets.fa3_hopper.problem import Fa3Params


def import_fa3() -> tuple[ModuleType, str]:
    """Import FA3's interface: a full build's ``flash_attn_interface`` or the ``fa3-fwd`` wheel.

    The wheel's ``round_up_headdim`` imports ``flash_attn_config``, which it ships as
    ``fa3_fwd_config``: the alias is registered before import.

    Raises:
        ImportError: Neither is installed.
    """
    try:
        module = importlib.import_module("flash_attn_interface")
        return module, dist_version("flash_attn_3", "flash-attn-3")
    except ImportError:
        pass
    config = importlib.import_module("fa3_fwd_config")
    sys.modules.setdefault("flash_attn_config", config)
    return importlib.import_module("fa3_fwd_interface"), dist_version("fa3-fwd")


def dist_version(*names: str) -> str:
    """``"<name> <version>"`` of the first of ``names`` installed (provenance)."""
    for name in names:
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return f"{names[0]} (version unknown)"


def first_output(result: Any) -> torch.Tensor:
    """The output of an interface that may also return the softmax's log-sum-exp."""
    out: torch.Tensor = result[0] if isinstance(result, tuple) else result
    return out


class Fa3(Upstream):
    """FlashAttention-3 (Hopper), through its Python interface, default settings."""

    name = "fa3"

    def __init__(self) -> None:
        self._module: ModuleType | None = None
        self._version = "not installed"
        self._error: str | None = None
        try:
            self._module, self._version = import_fa3()
        except Exception as exc:  # ImportError, or a broken install (missing CUDA libraries)
            self._error = f"FlashAttention-3 is not importable: {type(exc).__name__}: {exc}"

    def version(self) -> str:
        """Distribution name and version."""
        return self._version

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        """Only when FA3 cannot be imported."""
        return self._error

    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """Call ``flash_attn_func``, ``flash_attn_varlen_func`` or ``flash_attn_with_kvcache``."""
        if self._module is None:
            raise RuntimeError(self._error)
        fa3, i = self._module, inputs
        common = {"softmax_scale": i["softmax_scale"], "causal": i["causal"]}
        if "cu_seqlens" in i:
            cu, ms = i["cu_seqlens"], i["max_seqlen"]
            cu_k, ms_k = i.get("cu_seqlens_k", cu), i.get("max_seqlen_k", ms)
            return lambda: first_output(
                fa3.flash_attn_varlen_func(i["q"], i["k"], i["v"], cu, cu_k, ms, ms_k, **common)
            )
        descales = {k: i[k] for k in ("q_descale", "k_descale", "v_descale")}
        if "k_cache" in i:
            return lambda: first_output(
                fa3.flash_attn_with_kvcache(
                    i["q"],
                    i["k_cache"],
                    i["v_cache"],
                    k=i["k_new"],
                    v=i["v_new"],
                    cache_seqlens=i["cache_seqlens"],
                    num_splits=0,
                    **descales,
                    **common,
                )
            )
        return lambda: first_output(
            fa3.flash_attn_func(i["q"], i["k"], i["v"], **descales, **common)
        )


class TorchSdpa(Upstream):
    """torch ``scaled_dot_product_attention`` pinned to one backend, on transposed views.

    Supports what SDPA can express exactly: bf16 dense prefill, and uniform-length decode
    without causal masking or appends. Varlen, fp8, ragged caches, appends and bottom-right
    causal masks with ``seqlen_q != seqlen_k`` are reported unsupported.
    """

    def __init__(self, name: str, backend: SDPBackend) -> None:
        self.name = name
        self.backend = backend

    def version(self) -> str:
        """torch, CUDA and cuDNN versions."""
        return f"torch {torch.__version__} ({self.backend.name})"

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        """Why SDPA cannot express this scenario exactly, if it cannot."""
        p = Fa3Params.from_params(scenario.params)
        if p.fp8:
            return "SDPA has no fp8 attention"
        if p.kind == "varlen":
            return "SDPA has no packed varlen input"
        if p.kind == "prefill" and p.causal and p.seqlen_q != p.seqlen_k:
            return "SDPA's causal mask is top-left aligned"
        if p.kind == "kvcache":
            if p.ragged_min is not None:
                return "SDPA has no per-sequence cache lengths"
            if p.append:
                return "SDPA does not append to a KV cache"
            if p.causal and p.seqlen_q > 1:
                return "SDPA's causal mask is top-left aligned"
        return None

    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """SDPA on ``(b, h, s, d)`` views; for a cache, on its first ``cache_len`` rows."""
        q = inputs["q"]
        if "k_cache" in inputs:
            n = int(inputs["cache_seqlens"][0])
            k, v = inputs["k_cache"][:, :n], inputs["v_cache"][:, :n]
            causal = False
        else:
            k, v, causal = inputs["k"], inputs["v"], inputs["causal"]
        scale, backend = inputs["softmax_scale"], self.backend
        gqa = q.shape[2] != k.shape[2]

        def run() -> torch.Tensor:
            with sdpa_kernel([backend]):
                out = F.scaled_dot_product_attention(
                    q.transpose(1, 2),
                    k.transpose(1, 2),
                    v.transpose(1, 2),
                    is_causal=causal,
                    scale=scale,
                    enable_gqa=gqa,
                )
            return out.transpose(1, 2)

        return run


def fa3_upstreams() -> tuple[Upstream, ...]:
    """FA3, cuDNN and FA2 (the last two through SDPA)."""
    return (
        Fa3(),
        TorchSdpa("cudnn", SDPBackend.CUDNN_ATTENTION),
        TorchSdpa("fa2", SDPBackend.FLASH_ATTENTION),
    )
