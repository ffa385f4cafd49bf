"""fa3_hopper scenarios: typed parameters, random inputs, the float64 reference, work counts.

Kinds: ``prefill`` (dense q, k, v), ``varlen`` (packed sequences with ``cu_seqlens``) and
``kvcache`` (decode, speculative decode, chunked prefill against a KV cache, optionally
appending new keys and values). Layout ``(batch, seqlen, heads, head_dim)``; causal masks are
aligned bottom-right.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

import torch

from evals.harness.targets.attention import attended_pairs, reference_attention

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
REFERENCE_CHUNK_ELEMENTS = 1 << 27  # float64 scores per reference chunk (1 GiB)


@dataclass(frozen=True)
class Fa3Params:
    """Parameters of one fa3_hopper scenario (see ``scripts/make_fa3_suites.py``).

    The last five are optional and exercise contract clauses the original grid never did:
    ``scale`` (``softmax_scale``; None: ``1 / sqrt(head_dim)``), ``qk_std`` (standard
    deviation of q and k: large values overflow ``exp`` without max subtraction), ``v_std``
    (standard deviation of v: drawn scenarios reach bf16's range),
    ``seqlens_k`` (varlen key lengths when they differ from the query lengths ``seqlens``)
    and ``descale_spread`` (fp8: each (batch, KV head) group of q, k and v is scaled by
    ``2 ** u``, ``u`` uniform in ``[-spread, spread]``, before quantising, so the descales
    differ across batch and heads).
    """

    kind: Literal["prefill", "varlen", "kvcache"]
    category: str
    dtype: Literal["bfloat16", "float8_e4m3fn"]
    batch: int
    heads_q: int
    heads_kv: int
    head_dim: int
    causal: bool
    seqlen_q: int = 0
    seqlen_k: int = 0
    seqlens: tuple[int, ...] = ()
    cache_len: int = 0
    ragged_min: int | None = None
    append: bool = False
    scale: float | None = None
    qk_std: float = 1.0
    seqlens_k: tuple[int, ...] = ()
    descale_spread: float = 0.0
    v_std: float = 1.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Fa3Params:
        """Parse and validate scenario parameters."""
        names = {f.name for f in fields(cls)}
        extra = set(params) - names
        if extra:
            raise ValueError(f"unknown scenario parameters: {sorted(extra)}")
        seqlens = {k: tuple(params.get(k, ())) for k in ("seqlens", "seqlens_k")}
        p = cls(**{**params, **seqlens})
        if p.heads_q % p.heads_kv or p.head_dim not in (64, 96, 128, 192, 256):
            raise ValueError("bad heads or head_dim")
        if p.seqlens_k and len(p.seqlens_k) != len(p.seqlens):
            raise ValueError("seqlens_k must give one key length per sequence")
        return p

    @property
    def key_lengths(self) -> tuple[int, ...]:
        """Varlen key lengths per sequence (``seqlens_k``, else the query lengths)."""
        return self.seqlens_k or self.seqlens

    @property
    def fp8(self) -> bool:
        """Whether q, k, v are float8_e4m3fn."""
        return self.dtype == "float8_e4m3fn"

    @property
    def softmax_scale(self) -> float:
        """The scenario's ``scale``, or ``1 / sqrt(head_dim)``."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    @property
    def seqlen_new(self) -> int:
        """Keys appended to the cache per sequence (kvcache with append)."""
        return self.seqlen_q if self.append else 0

    def mean_keys(self) -> float:
        """Mean number of keys a sequence attends (before masking), for work estimates."""
        if self.kind == "kvcache":
            low = self.ragged_min if self.ragged_min is not None else self.cache_len
            return (low + self.cache_len) / 2 + self.seqlen_new
        return float(self.seqlen_k)


def _quantize(
    x: torch.Tensor, heads_kv: int, magnitude: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """fp8 e4m3 with a float32 descale per (batch, kv head); x: (b, s, h, d).

    ``magnitude`` (b, heads_kv), when given, scales each group first (distinct descales).
    """
    h = x.shape[2]
    groups = x.float().reshape(*x.shape[:2], heads_kv, h // heads_kv, x.shape[3])
    if magnitude is not None:
        groups = groups * magnitude.float()[:, None, :, None, None]
    amax = groups.abs().amax(dim=(1, 3, 4)).clamp_min(1e-6)  # (b, heads_kv)
    descale = (amax / FP8_MAX).float()
    q8 = (groups / descale[:, None, :, None, None]).to(FP8).flatten(2, 3)
    return q8, descale.contiguous()


def dequantize(x: torch.Tensor, descale: torch.Tensor | None) -> torch.Tensor:
    """Float64 values of an input; fp8 ``x`` (b, s, h, d) times ``descale`` (b, heads_kv)."""
    if descale is None:
        return x.double()
    group = x.shape[2] // descale.shape[1]
    scale = descale.double().repeat_interleave(group, dim=1)[:, None, :, None]
    return x.double() * scale


def make_timing_inputs(
    p: Fa3Params, seeds: list[int], device: str = "cuda"
) -> list[dict[str, Any]]:
    """Input sets for timing, one per seed.

    KV-cache scenarios share the cache of the first set (caches reach 32 GB per set); q and
    the appended keys and values are fresh per set, so every timed call has its own result.
    """
    first = make_inputs(p, seeds[0], device)
    sets = [first]
    shared = (first["k_descale"], first["v_descale"]) if p.kind == "kvcache" and p.fp8 else None
    for seed in seeds[1:]:
        fresh = make_inputs(p, seed, device, with_cache=p.kind != "kvcache", new_descales=shared)
        if p.kind == "kvcache":
            fresh.update(
                {
                    k: first[k]
                    for k in ("k_cache", "v_cache", "cache_seqlens", "k_descale", "v_descale")
                }
            )
        sets.append(fresh)
    return sets


def make_inputs(
    p: Fa3Params,
    seed: int,
    device: str = "cuda",
    *,
    with_cache: bool = True,
    new_descales: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> dict[str, Any]:
    """Random inputs for one call, deterministic in ``seed`` (normal, then dtype).

    q and k have standard deviation ``qk_std``, v ``v_std`` (1 unless the scenario says).
    fp8 appends are fp8 like the cache they go into (FA3 requires the dtype of q), quantised
    with the cache's ``k_descale``/``v_descale`` or ``new_descales`` (a shared cache's).
    """
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int, std: float = 1.0) -> torch.Tensor:
        x = torch.randn(shape, generator=gen, device=device, dtype=torch.bfloat16)
        return x if std == 1.0 else x.float().mul_(std).to(torch.bfloat16)

    out: dict[str, Any] = {"causal": p.causal, "softmax_scale": p.softmax_scale}
    if p.kind == "varlen":
        for suffix, lengths in (("", p.seqlens), ("_k", p.seqlens_k)):
            if lengths:
                cu = torch.tensor([0, *lengths], dtype=torch.int64).cumsum(0)
                out[f"cu_seqlens{suffix}"] = cu.to(device=device, dtype=torch.int32)
                out[f"max_seqlen{suffix}"] = max(lengths)
        total_q, total_k = sum(p.seqlens), sum(p.key_lengths)
        out.update(
            q=randn(total_q, p.heads_q, p.head_dim, std=p.qk_std),
            k=randn(total_k, p.heads_kv, p.head_dim, std=p.qk_std),
            v=randn(total_k, p.heads_kv, p.head_dim, std=p.v_std),
        )
        return out
    if p.kind == "prefill":
        q = randn(p.batch, p.seqlen_q, p.heads_q, p.head_dim, std=p.qk_std)
        k = randn(p.batch, p.seqlen_k, p.heads_kv, p.head_dim, std=p.qk_std)
        v = randn(p.batch, p.seqlen_k, p.heads_kv, p.head_dim, std=p.v_std)
        out.update(_maybe_fp8(p, gen, q=q, k=k, v=v))
        return out
    rows = p.cache_len + p.seqlen_new if with_cache else 1
    q = randn(p.batch, p.seqlen_q, p.heads_q, p.head_dim, std=p.qk_std)
    kc = randn(p.batch, rows, p.heads_kv, p.head_dim, std=p.qk_std)
    vc = randn(p.batch, rows, p.heads_kv, p.head_dim, std=p.v_std)
    if p.ragged_min is not None:
        lens = torch.randint(
            p.ragged_min, p.cache_len + 1, (p.batch,), generator=gen, device=device
        )
    else:
        lens = torch.full((p.batch,), p.cache_len, device=device)
    out["cache_seqlens"] = lens.to(torch.int32)
    quant = _maybe_fp8(p, gen, q=q, k=kc, v=vc)
    out.update(q=quant["q"], k_cache=quant["k"], v_cache=quant["v"])
    out.update({k: v for k, v in quant.items() if k.endswith("descale")})
    new_shape = (p.batch, p.seqlen_new, p.heads_kv, p.head_dim)
    out["k_new"] = out["v_new"] = None
    if p.append:
        k_new, v_new = randn(*new_shape, std=p.qk_std), randn(*new_shape, std=p.v_std)
        if p.fp8:
            k_ds, v_ds = new_descales or (out["k_descale"], out["v_descale"])
            k_new, v_new = _quantize_with(k_new, k_ds), _quantize_with(v_new, v_ds)
        out.update(k_new=k_new, v_new=v_new)
    return out


def _quantize_with(x: torch.Tensor, descale: torch.Tensor) -> torch.Tensor:
    """fp8 e4m3 of ``x`` (b, s, heads, d) with a given ``descale`` (b, heads), clamped."""
    return (x.float() / descale[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8)


def refill_query(p: Fa3Params, inputs: Mapping[str, Any], seed: int) -> None:
    """Overwrite ``inputs['q']`` in place with fresh standard-normal values drawn from ``seed``.

    fp8 queries are quantised with the input set's own ``q_descale`` (b, heads_kv), so the
    descales stay those the reference and every upstream see. Deterministic: the parent
    rebuilds a timed call's q to check its output.
    """
    q = inputs["q"]
    gen = torch.Generator(device=q.device).manual_seed(seed)
    fresh = torch.randn(q.shape, generator=gen, device=q.device, dtype=torch.bfloat16)
    if p.qk_std != 1.0:  # the scenario's magnitude (old scenarios draw exactly as before)
        fresh = fresh.float().mul_(p.qk_std).to(torch.bfloat16)
    if not p.fp8:
        q.copy_(fresh)
        return
    descale = inputs["q_descale"]  # (b, heads_kv): each query head has its KV head's
    q.copy_(_quantize_with(fresh, descale.repeat_interleave(q.shape[2] // descale.shape[1], 1)))


def _maybe_fp8(p: Fa3Params, gen: torch.Generator, **tensors: torch.Tensor) -> dict[str, Any]:
    if not p.fp8:
        return {**tensors, "q_descale": None, "k_descale": None, "v_descale": None}
    out: dict[str, Any] = {}
    for name, t in tensors.items():
        magnitude = None
        if p.descale_spread:
            u = torch.rand((p.batch, p.heads_kv), generator=gen, device=t.device) * 2 - 1
            magnitude = torch.exp2(u * p.descale_spread)
        out[name], out[f"{name}_descale"] = _quantize(t, p.heads_kv, magnitude)
    return out


def check_append(
    name: str, before: torch.Tensor | None, after: torch.Tensor, inputs: Mapping[str, Any]
) -> str | None:
    """Why the cache ``name`` after a call is not the contract's append, or None.

    Rows ``cache_seqlens[b] : cache_seqlens[b] + seqlen_new`` of sequence ``b`` must hold
    ``k_new`` (or ``v_new``) exactly (fp8 rows bit for bit: they arrive in the cache's dtype);
    every other row must be as it was (when ``before`` is known).
    """
    new = inputs["k_new" if name.startswith("k") else "v_new"]
    if new is None:
        return None
    if new.dtype != after.dtype:
        return f"the new rows are {new.dtype}, the cache {after.dtype}"
    if new.element_size() == 1:  # fp8: compare the bits (no equality kernels for fp8)
        new, after = new.view(torch.uint8), after.view(torch.uint8)
        before = None if before is None else before.view(torch.uint8)
    lens = inputs["cache_seqlens"].tolist()
    s_new = new.shape[1]
    for b, start in enumerate(lens):
        if not torch.equal(after[b, start : start + s_new], new[b]):
            return f"rows {start}:{start + s_new} of sequence {b} do not hold the appended keys"
    if before is None:
        return None
    expected = before.clone()
    for b, start in enumerate(lens):
        expected[b, start : start + s_new] = new[b]
    if not torch.equal(expected, after):
        return "rows outside the append changed"
    return None


def _block_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
) -> torch.Tensor:
    """Float64 attention of equal-length sequences; q: (b, sq, hq, d), k, v: (b, sk, hkv, d).

    Work is cut into as few calls as fit: over sequences, KV heads and query rows, so that
    neither the float64 scores nor the keys repeated for GQA exceed
    :data:`REFERENCE_CHUNK_ELEMENTS` (a Python loop of tiny calls dominated its cost).
    """
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    group = hq // hkv
    unit = group * max(1, sk)  # elements per sequence, KV head and query row (or head dim)
    out = torch.zeros(b, sq, hq, d, dtype=torch.float64, device=q.device)
    b_step = max(1, min(b, REFERENCE_CHUNK_ELEMENTS // (unit * d)))
    for b0 in range(0, b, b_step):
        bs = slice(b0, min(b, b0 + b_step))
        n = bs.stop - b0
        h_step = max(1, min(hkv, REFERENCE_CHUNK_ELEMENTS // (n * unit * max(d, sq))))
        rows = sq if h_step > 1 else max(1, min(sq, REFERENCE_CHUNK_ELEMENTS // (n * unit)))
        for g0 in range(0, hkv, h_step):
            gs = slice(g0, min(hkv, g0 + h_step))
            heads = slice(gs.start * group, gs.stop * group)
            # the widest causal chunk first: later, narrower chunks reuse its cached blocks
            # (growing chunks made the caching allocator reserve each new size anew: 54 GiB)
            for i0 in reversed(range(0, sq, rows)):
                i1 = min(sq, i0 + rows)
                k_end = max(0, min(sk, i1 + sk - sq)) if causal else sk
                if k_end == 0:
                    continue
                out[bs, i0:i1, heads] = reference_attention(
                    q[bs, i0:i1, heads],
                    k[bs, :k_end, gs],
                    v[bs, :k_end, gs],
                    causal=causal,
                    softmax_scale=scale,
                )
    return out


def reference(p: Fa3Params, inputs: Mapping[str, Any]) -> torch.Tensor:
    """The float64 output for ``inputs`` (dequantised for fp8), shaped like q.

    Sequences of equal key length are computed together, as many as keep their float64 keys
    and values under :data:`REFERENCE_CHUNK_ELEMENTS`.
    """
    scale = inputs["softmax_scale"]
    if p.kind == "varlen":
        cu_q = inputs["cu_seqlens"].tolist()
        cu_k = inputs.get("cu_seqlens_k", inputs["cu_seqlens"]).tolist()
        parts = [
            _block_reference(
                inputs["q"][None, qa:qb],
                inputs["k"][None, ka:kb],
                inputs["v"][None, ka:kb],
                p.causal,
                scale,
            )[0]
            for (qa, qb), (ka, kb) in zip(
                itertools.pairwise(cu_q), itertools.pairwise(cu_k), strict=True
            )
        ]
        return torch.cat(parts)
    key, val = ("k", "v") if p.kind == "prefill" else ("k_cache", "v_cache")
    lens = inputs["cache_seqlens"].tolist() if p.kind == "kvcache" else [p.seqlen_k] * p.batch
    per_seq = (max(lens) + p.seqlen_new) * p.heads_kv * p.head_dim
    step = max(1, REFERENCE_CHUNK_ELEMENTS // max(1, per_seq))

    def one(name: str, bs: slice, rows: int | None = None) -> torch.Tensor:
        descale = inputs[f"{name[0]}_descale"]
        return dequantize(inputs[name][bs, :rows], None if descale is None else descale[bs])

    out = []
    b0 = 0
    while b0 < p.batch:
        b1 = b0 + 1
        while b1 < p.batch and b1 - b0 < step and lens[b1] == lens[b0]:
            b1 += 1
        bs = slice(b0, b1)
        kb, vb = one(key, bs, lens[b0]), one(val, bs, lens[b0])
        if p.append:
            kb = torch.cat([kb, one("k_new", bs)], dim=1)
            vb = torch.cat([vb, one("v_new", bs)], dim=1)
        out.append(_block_reference(one("q", bs), kb, vb, p.causal, scale))
        b0 = b1
    return torch.cat(out)


def work(p: Fa3Params, *, lower_bound: bool = False) -> tuple[float, float]:
    """(FLOPs, bytes) of one call: matmuls over attended pairs; q, k, v read and out written.

    Ragged caches count their mean length, or their shortest with ``lower_bound`` (floors).
    """
    item = 1 if p.fp8 else 2
    if p.kind == "varlen":
        lengths = zip(p.seqlens, p.key_lengths, strict=True)
        pairs = sum(attended_pairs(sq, sk, p.causal) for sq, sk in lengths)
        tokens_q, tokens_k = float(sum(p.seqlens)), float(sum(p.key_lengths))
    else:
        keys = p.mean_keys()
        if lower_bound and p.ragged_min is not None:
            keys = float(p.ragged_min + p.seqlen_new)
        sk = round(keys)
        pairs = p.batch * attended_pairs(p.seqlen_q, sk, p.causal)
        tokens_q, tokens_k = float(p.batch * p.seqlen_q), p.batch * keys
    flops = 4.0 * pairs * p.heads_q * p.head_dim
    nbytes = (
        tokens_q * p.heads_q * p.head_dim * (item + 2)
        + 2 * tokens_k * p.heads_kv * p.head_dim * item
    )
    return flops, nbytes
