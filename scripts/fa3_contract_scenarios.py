"""The ``contract`` scenarios of the fa3_hopper suites (integrity II), for ``make_fa3_suites``.

They exercise the contract's clauses the study's grid never did: bottom-right causal masks
with ``seqlen_q != seqlen_k``, lengths of 1 and primes, other softmax scales, varlen key
lengths unlike the query lengths, fp8 descales that differ across batch and heads, KV-cache
appends into ragged caches (the cache is checked after the call), and q, k large enough that
scores overflow ``exp`` without max subtraction.
"""

from __future__ import annotations


def contract(sid, kind, dtype="bfloat16", *, d=128, hq=16, hkv=None, causal=True, **extra):
    """A ``contract`` scenario: the fields given, beyond what every scenario has."""
    params = dict(
        kind=kind,
        category="contract",
        dtype=dtype,
        heads_q=hq,
        heads_kv=hkv or hq,
        head_dim=d,
        causal=causal,
        **extra,
    )
    if kind == "varlen":
        params["batch"] = len(extra["seqlens"])
    return {"id": f"contract-{sid}", "contract": True, "params": params}


def contract_smoke():
    """Small contract scenarios for the smoke suite."""
    return [
        contract(
            "bf16-d128-q1-k4099-b2-h8k2-causal",
            "prefill",
            hq=8,
            hkv=2,
            batch=2,
            seqlen_q=1,
            seqlen_k=4099,
        ),
        contract(
            "bf16-d64-q251-k1021-b2-h4-causal-scale0.3",
            "prefill",
            d=64,
            hq=4,
            batch=2,
            seqlen_q=251,
            seqlen_k=1021,
            scale=0.3,
        ),
        contract(
            "fp8-d128-q257-k509-b3-h4k2-causal-spread3",
            "prefill",
            "float8_e4m3fn",
            hq=4,
            hkv=2,
            batch=3,
            seqlen_q=257,
            seqlen_k=509,
            descale_spread=3.0,
        ),
        contract(
            "varlen-bf16-d64-n3-h4k2-causal",
            "varlen",
            d=64,
            hq=4,
            hkv=2,
            seqlens=[1, 97, 300],
            seqlens_k=[61, 97, 1500],
        ),
        contract(
            "kvcache-bf16-d128-q3-b3-c1000-h8k2-append-ragged",
            "kvcache",
            hq=8,
            hkv=2,
            batch=3,
            seqlen_q=3,
            cache_len=1000,
            ragged_min=1,
            append=True,
        ),
        contract(
            "bf16-d128-s300-b1-h4-full-std8",
            "prefill",
            hq=4,
            causal=False,
            batch=1,
            seqlen_q=300,
            seqlen_k=300,
            qk_std=8.0,
        ),
    ]


def contract_dev():
    """Contract scenarios of dev size (also in the full suite)."""
    return [
        contract(
            "bf16-d128-q1000-k7919-b2-h16k4-causal",
            "prefill",
            hkv=4,
            batch=2,
            seqlen_q=1000,
            seqlen_k=7919,
        ),
        contract(
            "bf16-d64-s4093-b2-h16-causal-scale0.05",
            "prefill",
            d=64,
            batch=2,
            seqlen_q=4093,
            seqlen_k=4093,
            scale=0.05,
        ),
        contract(
            "fp8-d128-q2047-k8191-b2-h16k4-causal-spread3",
            "prefill",
            "float8_e4m3fn",
            hkv=4,
            batch=2,
            seqlen_q=2047,
            seqlen_k=8191,
            descale_spread=3.0,
        ),
        contract(
            "varlen-bf16-d128-n5-h16k4-causal",
            "varlen",
            hkv=4,
            seqlens=[1, 333, 2049, 4001, 63],
            seqlens_k=[4097, 333, 3001, 4001, 1],
        ),
        contract(
            "kvcache-bf16-d128-q13-b8-c10007-h32k8-append-ragged",
            "kvcache",
            hq=32,
            hkv=8,
            batch=8,
            seqlen_q=13,
            cache_len=10007,
            ragged_min=1,
            append=True,
        ),
        contract(
            "bf16-d128-s2049-b2-h16-causal-std8",
            "prefill",
            batch=2,
            seqlen_q=2049,
            seqlen_k=2049,
            qk_std=8.0,
        ),
    ]


def contract_full():
    """Contract scenarios only the full suite holds (beyond the dev ones)."""
    return [
        contract(
            "bf16-d256-q511-k16411-b1-h8-causal",
            "prefill",
            d=256,
            hq=8,
            batch=1,
            seqlen_q=511,
            seqlen_k=16411,
        ),
        contract(
            "bf16-d96-s3001-b3-h16-full-scale0.2",
            "prefill",
            d=96,
            causal=False,
            batch=3,
            seqlen_q=3001,
            seqlen_k=3001,
            scale=0.2,
        ),
        contract(
            "fp8-d128-b8-c32771-h32k8-spread3",
            "kvcache",
            "float8_e4m3fn",
            hq=32,
            hkv=8,
            causal=False,
            batch=8,
            seqlen_q=1,
            cache_len=32771,
            descale_spread=3.0,
        ),
        contract(
            "varlen-bf16-d64-n7-h32k8-full",
            "varlen",
            d=64,
            hq=32,
            hkv=8,
            causal=False,
            seqlens=[1, 7, 127, 1021, 4099, 2, 3001],
            seqlens_k=[8191, 7, 1, 1021, 511, 3, 6007],
            scale=0.11,
        ),
        contract(
            "kvcache-bf16-d64-q127-b4-c65521-h32k8-append-causal",
            "kvcache",
            d=64,
            hq=32,
            hkv=8,
            batch=4,
            seqlen_q=127,
            cache_len=65521,
            append=True,
        ),
        contract(
            "fp8-d128-s8191-b1-h16-causal-std8-spread2",
            "prefill",
            "float8_e4m3fn",
            batch=1,
            seqlen_q=8191,
            seqlen_k=8191,
            qk_std=8.0,
            descale_spread=2.0,
        ),
    ]
