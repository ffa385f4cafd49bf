"""fa3_hopper's drawn contract scenarios and its partial k/v rewrite.

A draw (``suites/fa3_hopper/draw.json``, read by :mod:`evals.harness.contract.contract_draw`) is a
small dense, varlen or KV-cache scenario anywhere in the contract's space: any KV heads and GQA
group, every head dimension, causal with ``seqlen_q`` above ``seqlen_k`` (rows that see no key) or
below it, scales of either sign and any size, values up to bf16's range, fp8 with descales spread
over batch and heads, appends into ragged caches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evals.harness.targets.draw_space import DrawSpace
from evals.harness.verification.kv_rewrite import rewrite_kv_rows
from evals.targets.fa3_hopper.problem import Fa3Params


def draw_params(space: DrawSpace) -> tuple[str, dict[str, Any]]:
    """One drawn scenario: a short id part and its parameters (validated)."""
    kind = space.cycle("kind")
    d, hkv, group = space.choice("head_dim"), space.cycle("heads_kv"), space.cycle("group")
    causal, sq, sk = space.layout()
    params: dict[str, Any] = {
        "kind": kind,
        "category": "contract",
        "dtype": "bfloat16" if kind == "varlen" else space.choice("dtype"),
        "heads_q": hkv * group,
        "heads_kv": hkv,
        "head_dim": d,
        "causal": causal,
        **space.magnitudes(d),
    }
    if kind == "varlen":
        n = space.integer("sequences")
        lengths = [space.layout()[1:] for _ in range(n - 1)]
        pairs = [(sq, sk), *lengths]
        params.update(batch=n, seqlens=[q for q, _ in pairs], seqlens_k=[k for _, k in pairs])
        shape = f"n{n}"
    elif kind == "kvcache":
        seqlen_q, cache_len, above = _cache_lengths(space, causal, sq, sk)
        batch = space.integer("batch")
        append = False if above else space.choice("append")
        if append and space.pinned("seqlen_q"):  # the class holds: appended rows are keys too
            append = sk > seqlen_q
            cache_len = sk - seqlen_q if append else cache_len
        params.update(
            batch=batch,
            seqlen_q=seqlen_q,
            cache_len=cache_len,
            append=append,
            ragged_min=space.choice("ragged_min"),
        )
        shape = f"q{params['seqlen_q']}-c{cache_len}"
    else:
        params.update(batch=space.integer("batch"), seqlen_q=sq, seqlen_k=sk)
        shape = f"q{sq}-k{sk}"
    if params["dtype"] == "float8_e4m3fn":
        params["descale_spread"] = space.real("descale_spread")
    Fa3Params.from_params(params)  # the space must stay inside the contract
    dtype = "fp8" if params["dtype"] == "float8_e4m3fn" else "bf16"
    mask = "causal" if causal else "full"
    return f"{kind}-{dtype}-d{d}-{shape}-h{hkv * group}k{hkv}-{mask}", params


def _cache_lengths(space: DrawSpace, causal: bool, sq: int, sk: int) -> tuple[int, int, bool]:
    """``(seqlen_q, cache_len, above)`` of a KV-cache draw; ``above``: rows that see no key.

    A covering row's lengths are kept (``sq`` new query rows against ``sk`` cached keys); a
    random draw's query rows come from ``new_rows``, and rows that see no key from more
    queries than cached keys, nothing appended.
    """
    above = causal and sq > sk
    if space.pinned("seqlen_q"):
        return sq, sk, above
    new = space.integer("new_rows")
    return (max(new, 2), max(1, new // 2), True) if above else (new, sk, False)


def rewrite(p: Fa3Params, inputs: Mapping[str, Any], seed: int) -> None:
    """A few rows of one KV head of the keys and values rewritten in place.

    Dense and varlen: ``k``, ``v``; a KV cache: ``k_cache``, ``v_cache`` within each
    sequence's cached rows (``cache_seqlens``); fp8 with the sequence's own descales.
    """
    cache = p.kind == "kvcache"
    k, v = (inputs["k_cache"], inputs["v_cache"]) if cache else (inputs["k"], inputs["v"])
    descales = (inputs["k_descale"], inputs["v_descale"]) if p.fp8 else None
    rewrite_kv_rows(
        k,
        v,
        seed=seed,
        qk_std=p.qk_std,
        v_std=p.v_std,
        valid_rows=inputs["cache_seqlens"].tolist() if cache else None,
        descales=descales,
    )
