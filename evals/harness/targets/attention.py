"""Attention math shared by targets: shapes, the float64 reference, work counts.

Layout everywhere: ``(batch, seqlen, heads, head_dim)``. Causal masks are aligned bottom-right
(as in FlashAttention): query ``i`` attends key ``j`` iff ``j <= i + seqlen_k - seqlen_q``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

DTYPES: Mapping[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float8_e4m3fn": torch.float8_e4m3fn,
}


@dataclass(frozen=True)
class AttentionShape:
    """Parameters of one dense attention call.

    Attributes:
        batch: Batch size.
        seqlen_q: Query length.
        seqlen_k: Key/value length.
        heads_q: Query heads.
        heads_kv: Key/value heads (``heads_q % heads_kv == 0``; fewer means GQA/MQA).
        head_dim: Head dimension.
        causal: Bottom-right aligned causal mask.
        dtype: Input and output dtype name (a key of :data:`DTYPES`).
        scale: ``softmax_scale`` passed to the kernel; None means ``1 / sqrt(head_dim)``.
        qk_std: Standard deviation of q and k. Large values make scores that overflow ``exp``
            unless the row maximum is subtracted first.
        v_std: Standard deviation of v (drawn contract scenarios reach the dtype's range).

    """

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_kv: int
    head_dim: int
    causal: bool
    dtype: str
    scale: float | None = None
    qk_std: float = 1.0
    v_std: float = 1.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AttentionShape:
        """Build from scenario parameters, validating them."""
        fields = cls.__dataclass_fields__
        extra = set(params) - set(fields)
        if extra:
            raise ValueError(f"unknown scenario parameters: {sorted(extra)}")
        optional = {"scale", "qk_std", "v_std"}
        missing = set(fields) - optional - set(params)
        if missing:
            raise ValueError(f"missing scenario parameters: {sorted(missing)}")
        shape = cls(**dict(params))
        if shape.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {shape.dtype!r}")
        if shape.heads_q % shape.heads_kv:
            raise ValueError("heads_q must be a multiple of heads_kv")
        return shape

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype of inputs and output."""
        return DTYPES[self.dtype]

    @property
    def softmax_scale(self) -> float:
        """The scenario's ``scale``, or ``1 / sqrt(head_dim)`` when it sets none."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)


def attended_pairs(seqlen_q: int, seqlen_k: int, causal: bool) -> int:
    """Number of (query, key) pairs attended per batch element and head."""
    if not causal:
        return seqlen_q * seqlen_k
    offset = seqlen_k - seqlen_q
    # Query i attends min(seqlen_k, max(0, i + offset + 1)) keys.
    return sum(min(seqlen_k, max(0, i + offset + 1)) for i in range(seqlen_q))


def attention_flops(shape: AttentionShape) -> float:
    """FLOPs of the two matmuls over attended pairs: ``4 * pairs * head_dim`` per head."""
    pairs = attended_pairs(shape.seqlen_q, shape.seqlen_k, shape.causal)
    return 4.0 * shape.batch * shape.heads_q * pairs * shape.head_dim


def attention_bytes(shape: AttentionShape, out_itemsize: int) -> float:
    """Bytes read (q, k, v) and written (out) once."""
    item = torch.empty((), dtype=shape.torch_dtype).element_size()
    q = shape.batch * shape.seqlen_q * shape.heads_q * shape.head_dim
    kv = 2 * shape.batch * shape.seqlen_k * shape.heads_kv * shape.head_dim
    return float((q + kv) * item + q * out_itemsize)


KV_NAMES = ("k", "v", "k_cache", "v_cache", "k_new", "v_new")
"""Inputs laid out ``(..., heads_kv, head_dim)``; ``q`` is ``(..., heads_q, head_dim)``."""


def cut_heads(inputs: Mapping[str, Any], kv: slice, group: int) -> dict[str, Any]:
    """``inputs`` restricted to the KV heads ``kv`` and their query heads (views).

    Query head ``i`` belongs to KV head ``i // group``; ``*_descale`` tensors are
    ``(batch, heads_kv)``. Other entries are kept as they are.
    """
    q_heads = slice(kv.start * group, kv.stop * group)
    out = dict(inputs)
    for name, value in inputs.items():
        if not isinstance(value, torch.Tensor):
            continue
        if name == "q":
            out[name] = value[..., q_heads, :]
        elif name in KV_NAMES:
            out[name] = value[..., kv, :]
        elif name.endswith("_descale"):
            out[name] = value[:, kv]
    return out


def causal_mask(seqlen_q: int, seqlen_k: int, device: torch.device | str) -> torch.Tensor:
    """Boolean ``(seqlen_q, seqlen_k)`` mask, True where attention is allowed (bottom-right)."""
    rows = torch.arange(seqlen_q, device=device).unsqueeze(1)
    cols = torch.arange(seqlen_k, device=device).unsqueeze(0)
    return cols <= rows + (seqlen_k - seqlen_q)


def reference_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, softmax_scale: float
) -> torch.Tensor:
    """Float64 attention.

    Args:
        q: ``(batch, seqlen_q, heads_q, head_dim)``.
        k: ``(batch, seqlen_k, heads_kv, head_dim)``.
        v: ``(batch, seqlen_k, heads_kv, head_dim)``.
        causal: Bottom-right aligned causal mask.
        softmax_scale: Multiplier of ``q @ k^T``.

    Returns:
        ``(batch, seqlen_q, heads_q, head_dim)`` in float64. Rows with no attended key are 0.

    """
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    group = hq // hkv
    # the query heads of one KV head become rows of one matmul with its keys: the keys are
    # never repeated per group (a decode's float64 cache is the largest input here)
    qd = (q.double() * softmax_scale).view(b, sq, hkv, group, d).permute(0, 2, 3, 1, 4)
    kd, vd = k.double().transpose(1, 2), v.double().transpose(1, 2)  # (b, hkv, sk, d)
    scores = torch.matmul(qd.reshape(b, hkv, group * sq, d), kd.transpose(-1, -2))
    # the scores are the largest tensor here: every pass over them is in place
    if causal:
        grouped = scores.view(b, hkv, group, sq, sk)
        grouped.masked_fill_(causal_mask(sq, sk, q.device).logical_not_(), float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top.masked_fill_(top == float("-inf"), 0.0)  # a row with no key: exp gives 0, not NaN
    weights = scores.sub_(top).exp_()
    total = weights.sum(dim=-1, keepdim=True)
    out = torch.matmul(weights, vd).div_(total).nan_to_num_(0.0)  # 0/0 for a row with no key
    return out.view(b, hkv, group, sq, d).permute(0, 3, 1, 2, 4).reshape(b, sq, hq, d)
