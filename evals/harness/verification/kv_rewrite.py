"""The partial-rewrite probe's edit: a few rows of one KV head of k and v rewritten in place.

The anti-caching probe refills every element of the inputs, so a kernel that keys a cache on a
sample of k and v (a fingerprint of a few elements) misses there and recomputes. Rewriting a
short run of rows of one KV head, at positions drawn from a seed the candidate never sees,
leaves such a fingerprint unchanged while the right output changes: the kernel must return
the new result.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

FP8_MAX = 448.0
KEY_BOOST = 3.0
"""New keys are this many times the scenario's q/k magnitude, so their scores stand out of the
softmax and the rewritten rows move the output well past any tolerance."""
VALUE_SHIFT = 4.0
"""New values are shifted by this many of the scenario's v magnitudes, for the same reason."""


def rewrite_kv_rows(
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    seed: int,
    qk_std: float,
    v_std: float,
    valid_rows: Sequence[int] | None = None,
    descales: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> None:
    """Rewrite rows ``start : start + n`` of one KV head of one sequence of ``k`` and ``v``.

    Args:
        k: Keys, ``(batch, seqlen, heads_kv, head_dim)`` or packed ``(total, heads_kv,
            head_dim)``; written in place.
        v: Values, shaped like ``k``; written in place.
        seed: Positions and new values come from a CPU generator seeded with it (the same on
            every device, so the parent rebuilds the same edit).
        qk_std: The scenario's q/k standard deviation (new keys are :data:`KEY_BOOST` times it).
        v_std: The scenario's v standard deviation.
        valid_rows: Per sequence, how many leading rows are attended (a KV cache's lengths);
            all rows when None.
        descales: fp8 ``(k_descale, v_descale)``, each ``(batch, heads_kv)``: the new real
            values are quantised with the sequence's own descales.

    """
    gen = torch.Generator().manual_seed(seed)
    batched = k.dim() == 4
    rows = k.shape[1] if batched else k.shape[0]
    limits = list(valid_rows) if valid_rows is not None else [rows] * (k.shape[0] if batched else 1)
    candidates = [b for b, n in enumerate(limits) if n > 0]
    if not candidates:
        return
    b = candidates[int(torch.randint(len(candidates), (1,), generator=gen))]
    limit = min(limits[b], rows)
    n = max(1, limit // 8)
    start = int(torch.randint(limit - n + 1, (1,), generator=gen))
    head = int(torch.randint(k.shape[-2], (1,), generator=gen))
    d = k.shape[-1]
    new_k = torch.randn(n, d, generator=gen, dtype=torch.float64) * (KEY_BOOST * qk_std)
    new_v = (torch.randn(n, d, generator=gen, dtype=torch.float64) + VALUE_SHIFT) * v_std
    for dst, new, i in ((k, new_k, 0), (v, new_v, 1)):
        if descales is not None:
            new = (new / float(descales[i][b, head])).clamp(-FP8_MAX, FP8_MAX)
        rows_view = dst[b, start : start + n, head] if batched else dst[start : start + n, head]
        rows_view.copy_(new.to(device=dst.device, dtype=torch.float32).to(dst.dtype))
