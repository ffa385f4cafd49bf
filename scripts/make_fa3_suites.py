"""Write the fa3_hopper scenario suites (dev: 26 + 6, full: 182 + 12) as data files.

The grids follow the fa3_hopper issue. Dev scenarios not literally in the full grid replace
their nearest grid neighbour (ties go to the smaller neighbour), so the full suite has 182
grid scenarios and contains all 26 of the study's dev table. Every suite then adds
``contract`` scenarios (integrity II) for the contract's clauses the grid never tested:
bottom-right causal masks with ``seqlen_q != seqlen_k``, lengths of 1 and primes, other
softmax scales, varlen key lengths that differ from the query lengths, fp8 descales that
differ across batch and heads, KV-cache appends into ragged caches (the cache is checked
after the call), and q, k large enough that scores overflow ``exp`` without max
subtraction. Run from the repository root:
    python scripts/make_fa3_suites.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from fa3_contract_scenarios import contract_dev, contract_full, contract_smoke

OUT = Path("evals/targets/fa3_hopper/suites")
TOKENS = 16384
MODEL_DIM = 2048
KB = 1024
SHORT = {"bfloat16": "bf16", "float8_e4m3fn": "fp8"}


def _heads(hq: int, hkv: int) -> str:
    return f"h{hq}" + (f"k{hkv}" if hkv != hq else "")


def prefill(d, s, causal, *, dtype="bfloat16", hq=None, hkv=None, batch=None, category="prefill"):
    hq = hq or MODEL_DIM // d
    hkv = hkv or hq
    batch = batch or max(1, TOKENS // s)
    sid = (
        f"{category}-{SHORT[dtype]}-d{d}-s{s}-b{batch}-{_heads(hq, hkv)}-"
        f"{'causal' if causal else 'full'}"
    )
    params = dict(
        kind="prefill",
        category=category,
        dtype=dtype,
        batch=batch,
        seqlen_q=s,
        seqlen_k=s,
        heads_q=hq,
        heads_kv=hkv,
        head_dim=d,
        causal=causal,
    )
    return {"id": sid, "params": params}


def varlen(d, causal, seed=0, *, lengths=None, hq=None, category="varlen"):
    """Packed sequences: random lengths in [128, 4096] summing to 16k, unless given."""
    if lengths is None:
        rng = random.Random(seed)
        lengths = []
        while sum(lengths) < TOKENS:
            lengths.append(min(rng.randint(128, 4096), TOKENS - sum(lengths)))
    hq = hq or MODEL_DIM // d
    sid = f"{category}-bf16-d{d}-n{len(lengths)}-{_heads(hq, hq)}-{'causal' if causal else 'full'}"
    params = dict(
        kind="varlen",
        category=category,
        dtype="bfloat16",
        batch=len(lengths),
        seqlens=lengths,
        heads_q=hq,
        heads_kv=hq,
        head_dim=d,
        causal=causal,
    )
    return {"id": sid, "params": params}


def kvcache(
    category,
    batch,
    cache,
    *,
    d=128,
    hq=32,
    hkv=8,
    sq=1,
    dtype="bfloat16",
    causal=False,
    append=False,
    ragged_min=None,
):
    q = f"q{sq}-" if sq > 1 else ""
    sid = (
        f"{category}-{SHORT[dtype]}-d{d}-{q}b{batch}-c{cache}-{_heads(hq, hkv)}"
        f"{'-causal' if causal else ''}"
    )
    params = dict(
        kind="kvcache",
        category=category,
        dtype=dtype,
        batch=batch,
        seqlen_q=sq,
        cache_len=cache,
        ragged_min=ragged_min,
        append=append,
        heads_q=hq,
        heads_kv=hkv,
        head_dim=d,
        causal=causal,
    )
    return {"id": sid, "params": params}


def dev_suite():
    dev = [prefill(d, s, c) for c in (False, True) for d in (64, 128, 256) for s in (KB, 8 * KB)]
    dev += [prefill(128, s, True, hq=32, hkv=8, category="gqa") for s in (2 * KB, 8 * KB)]
    dev += [
        prefill(d, 8 * KB, c, dtype="float8_e4m3fn", batch=2, category="fp8")
        for d in (128, 256)
        for c in (False, True)
    ]
    dev += [
        kvcache("decode", b, c) for b, c in ((1, 8 * KB), (1, 128 * KB), (8, 32 * KB), (64, 8 * KB))
    ]
    dev += [kvcache("ragged", 32, 32 * KB, hq=64, ragged_min=KB)]
    dev += [kvcache("decode", 16, 16 * KB, hq=16, hkv=1)]
    dev += [kvcache("spec", 16, 16 * KB, sq=8, causal=True, append=True)]
    dev += [kvcache("chunk", 4, 32 * KB, sq=64, causal=True, append=True)]
    return dev


def smoke_suite():
    """Small scenarios of every kind, for quick GPU tests (not part of dev or full)."""
    return [
        prefill(64, 1000, False, batch=2, hq=4, category="smoke"),
        prefill(128, 512, True, batch=2, hq=8, hkv=2, category="smoke"),
        prefill(256, 256, True, dtype="float8_e4m3fn", batch=1, hq=4, category="smoke"),
        varlen(96, True, lengths=[77, 300, 1000], hq=4, category="smoke"),
        kvcache("smoke", 4, 3000, hq=8, hkv=2, ragged_min=100),
        kvcache("smoke", 2, 2048, sq=16, causal=True, append=True),
    ]


def full_grid():
    seqs = [512 * 2**i for i in range(6)]
    grid = [prefill(d, s, c) for d in (64, 96, 128, 192, 256) for s in seqs for c in (False, True)]
    grid += [
        prefill(128, s, c, hq=32, hkv=32 // r, category="gqa")
        for r in (4, 8)
        for s in (KB, 4 * KB, 16 * KB)
        for c in (False, True)
    ]
    grid += [
        prefill(d, s, c, dtype="float8_e4m3fn", category="fp8")
        for d in (64, 128, 256)
        for s in (KB, 4 * KB, 16 * KB)
        for c in (False, True)
    ]
    grid += [varlen(d, c, seed=d * 2 + c) for d in (64, 128, 256) for c in (False, True)]
    grid += [
        kvcache("decode", b, c) for b in (1, 4, 16, 64) for c in (2, 8, 32, 128) for c in [c * KB]
    ]
    grid += [
        kvcache("decode", b, c * KB, d=d, hq=MODEL_DIM // d, hkv=hkv)
        for d in (64, 128, 256)
        for hkv in (1, 8)
        for b in (1, 16)
        for c in (8, 64)
    ]
    grid += [
        kvcache("ragged", b, c * KB, hq=64, ragged_min=KB) for b in (8, 32, 128) for c in (8, 32)
    ]
    grid += [
        kvcache("fp8decode", b, c * KB, dtype="float8_e4m3fn") for b in (1, 16) for c in (8, 64)
    ]
    grid += [
        kvcache("spec", b, c * KB, sq=q, causal=True, append=True)
        for q in (2, 4, 8, 16, 64, 128)
        for c in (8, 32)
        for b in (1, 16)
    ]
    grid += [
        kvcache("chunk", b, c * KB, sq=q, causal=True, append=True)
        for q in (512, 2048)
        for c in (8, 32)
        for b in (1, 4)
    ]
    grid += [
        prefill(128, s * KB, c, batch=1, category="long") for s in (32, 64) for c in (False, True)
    ]
    return grid


# dev id -> the grid id it replaces (its nearest neighbour; ties go to the smaller one)
SWAPS = {
    "gqa-bf16-d128-s2048-b8-h32k8-causal": "gqa-bf16-d128-s1024-b16-h32k8-causal",
    "gqa-bf16-d128-s8192-b2-h32k8-causal": "gqa-bf16-d128-s4096-b4-h32k8-causal",
    "fp8-fp8-d128-s8192-b2-h16-full": "fp8-fp8-d128-s4096-b4-h16-full",
    "fp8-fp8-d128-s8192-b2-h16-causal": "fp8-fp8-d128-s4096-b4-h16-causal",
    "fp8-fp8-d256-s8192-b2-h8-full": "fp8-fp8-d256-s4096-b4-h8-full",
    "fp8-fp8-d256-s8192-b2-h8-causal": "fp8-fp8-d256-s4096-b4-h8-causal",
    "decode-bf16-d128-b8-c32768-h32k8": "decode-bf16-d128-b4-c32768-h32k8",
    "decode-bf16-d128-b16-c16384-h16k1": "decode-bf16-d128-b16-c8192-h16k1",
    "spec-bf16-d128-q8-b16-c16384-h32k8-causal": "spec-bf16-d128-q8-b16-c8192-h32k8-causal",
    "chunk-bf16-d128-q64-b4-c32768-h32k8-causal": "chunk-bf16-d128-q512-b4-c32768-h32k8-causal",
}


def main() -> None:
    dev = dev_suite()
    grid = full_grid()
    by_id = {s["id"]: s for s in dev}
    full = []
    for sc in grid:
        swapped_in = [d for d, g in SWAPS.items() if g == sc["id"]]
        full.append(by_id[swapped_in[0]] if swapped_in else by_id.get(sc["id"], sc))
    ids = [s["id"] for s in full]
    assert len(dev) == 26 and len(full) == 182, (len(dev), len(full))
    assert len(set(ids)) == 182 and {s["id"] for s in dev} <= set(ids)
    dev += contract_dev()
    full += contract_dev() + contract_full()
    OUT.mkdir(parents=True, exist_ok=True)
    smoke = smoke_suite() + contract_smoke()
    for name, items in (("smoke", smoke), ("dev", dev), ("full", full)):
        doc = {
            "format": "kernelseek.suite/1",
            "target": "fa3_hopper",
            "suite": name,
            "scenarios": items,
        }
        (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(name, len(items))


if __name__ == "__main__":
    main()
