"""Standalone correctness and rough-speed check of kernels/fa3_hopper/start.cu on an H100/H200.

Builds start.cu with torch.utils.cpp_extension (the harness's flags), then runs a list of small
but representative cases of torch.ops.kernelseek.flash_forward / flash_forward_kvcache against a
float64 PyTorch reference (masked softmax attention, bottom-right causal mask, dequantised inputs
for fp8). One line per case; exit status 1 if any case fails, "ALL PASS" when all pass.

    python .scratch/fa3_start_check.py [--filter SUBSTR] [--no-time]
"""

import argparse
import itertools
import math
import os
import sys
import time

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "kernels", "fa3_hopper", "start.cu")
DEV = "cuda"
BF16 = torch.bfloat16
FP8 = torch.float8_e4m3fn


def build():
    t0 = time.time()
    load(
        name="fa3_start",
        sources=[os.path.abspath(SRC)],
        extra_cuda_cflags=[
            "-O3",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-std=c++17",
            "--expt-relaxed-constexpr",
            "-lineinfo",
        ],
        is_python_module=False,
        verbose=False,
    )
    print(f"built start.cu in {time.time() - t0:.1f} s", flush=True)


# ----------------------------------------------------------------------------------------------
# Reference


def ref_attention(q, k, v, causal, scale):
    """q (sq, hq, d), k/v (sk, hk, d), float64. Returns (sq, hq, d) float64; empty rows are 0."""
    sq, hq, d = q.shape
    sk, hk = k.shape[0], k.shape[1]
    group = hq // hk
    out = torch.zeros(sq, hq, d, dtype=torch.float64, device=q.device)
    if sq == 0 or sk == 0:
        return out
    mask = None
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        mask = j > i + (sk - sq)  # True = hidden
    # chunk heads so that a chunk's scores stay under ~1 GiB
    hc = max(1, min(hq, (1 << 27) // max(1, sq * sk)))
    for h0 in range(0, hq, hc):
        h1 = min(hq, h0 + hc)
        kh = torch.arange(h0, h1, device=q.device) // group
        s = torch.einsum("qhd,khd->hqk", q[:, h0:h1], k[:, kh]) * scale
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        p = torch.exp(s - m)
        lsum = p.sum(dim=-1, keepdim=True)
        o = torch.einsum("hqk,khd->qhd", p, v[:, kh])
        lsum = lsum.permute(1, 0, 2)  # (sq, h, 1)
        out[:, h0:h1] = torch.where(lsum > 0, o / lsum.clamp_min(1e-300), torch.zeros_like(o))
    return out


def dequant(x, descale, group, batch_first=True):
    """x (b, s, h, d) fp8 or bf16 -> float64, times descale[b, h // group] if given."""
    xf = x.to(torch.float64)
    if descale is None:
        return xf
    ds = descale.to(torch.float64).repeat_interleave(group, dim=1)  # (b, h)
    return xf * ds[:, None, :, None]


def rand_inputs(shape, dtype, gen_scale=1.0):
    x = torch.randn(shape, device=DEV, dtype=torch.float32) * gen_scale
    if dtype == FP8:
        return (x * 2.0).to(FP8)
    return x.to(BF16)


def rand_descales(b, hk, dtype):
    if dtype != FP8:
        return None, None, None
    mk = lambda: (torch.rand(b, hk, device=DEV) * 0.5 + 0.25).contiguous()  # noqa: E731
    return mk(), mk(), mk()


# ----------------------------------------------------------------------------------------------
# Timing / comparison helpers


def poison_allocator(numel):
    # Fill a freed block with NaN so that an output allocated next from the caching allocator
    # starts as NaN: unwritten output elements then show up as failures.
    t = torch.full((numel,), float("nan"), device=DEV, dtype=BF16)
    del t


def time_call(fn, reps):
    if reps <= 0:
        return float("nan")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def attended_pairs(sq, sk, causal):
    if not causal:
        return sq * sk
    off = sk - sq
    return sum(min(sk, max(0, i + off + 1)) for i in range(sq)) if sq < 200000 else sq * sk // 2


RESULTS = []


def report(name, out, ref, ms, flops, extra_ok=True, extra_msg=""):
    out = out.to(torch.float64)
    finite = bool(torch.isfinite(out).all())
    ref_max = ref.abs().max().item() if ref.numel() else 0.0
    err = (out - ref).abs().max().item() if out.numel() else 0.0
    tol = 1e-2 * ref_max + 2e-3
    ok = finite and err <= tol and extra_ok
    tflops = flops / (ms * 1e-3) / 1e12 if ms == ms and ms > 0 else float("nan")
    status = "PASS" if ok else "FAIL"
    msg = f"{status}  {name:58s} max_err {err:.2e}  tol {tol:.2e}  |ref|max {ref_max:.2f}"
    if not finite:
        msg += "  NON-FINITE"
    msg += f"  {ms:8.3f} ms  {tflops:7.1f} TFLOP/s" + (f"  {extra_msg}" if extra_msg else "")
    print(msg, flush=True)
    RESULTS.append(ok)


# ----------------------------------------------------------------------------------------------
# Cases


def case_dense(b, sq, sk, hq, hk, d, causal, dtype=BF16, gen_scale=1.0, reps=10, tag=""):
    name = f"dense {'fp8' if dtype == FP8 else 'bf16'} b{b} sq{sq} sk{sk} h{hq}:{hk} d{d}"
    name += (" causal" if causal else "") + tag
    q = rand_inputs((b, sq, hq, d), dtype, gen_scale)
    k = rand_inputs((b, sk, hk, d), dtype)
    v = rand_inputs((b, sk, hk, d), dtype)
    qd, kd, vd = rand_descales(b, hk, dtype)
    scale = 1.0 / math.sqrt(d)
    fn = lambda: torch.ops.kernelseek.flash_forward(  # noqa: E731
        q, k, v, None, None, sq, sk, qd, kd, vd, causal, scale
    )
    poison_allocator(q.numel())
    out = fn()
    torch.cuda.synchronize()
    g = hq // hk
    qf, kf, vf = dequant(q, qd, g), dequant(k, kd, 1), dequant(v, vd, 1)
    ref = torch.stack([ref_attention(qf[i], kf[i], vf[i], causal, scale) for i in range(b)])
    ok_shape = out.shape == q.shape and out.dtype == BF16
    ms = time_call(fn, reps)
    report(name, out, ref, ms, 4 * b * hq * d * attended_pairs(sq, sk, causal), ok_shape)


def case_varlen(lens_q, lens_k, hq, hk, d, causal, dtype=BF16, reps=10):
    b = len(lens_q)
    name = f"varlen {'fp8' if dtype == FP8 else 'bf16'} b{b} h{hq}:{hk} d{d}"
    name += (" causal" if causal else "") + f" q{lens_q[:3]}.. k{lens_k[:3]}.."
    cu_q = torch.tensor([0, *itertools.accumulate(lens_q)], dtype=torch.int32, device=DEV)
    cu_k = torch.tensor([0, *itertools.accumulate(lens_k)], dtype=torch.int32, device=DEV)
    tq, tk = sum(lens_q), sum(lens_k)
    q = rand_inputs((tq, hq, d), dtype)
    k = rand_inputs((tk, hk, d), dtype)
    v = rand_inputs((tk, hk, d), dtype)
    qd, kd, vd = rand_descales(b, hk, dtype)
    scale = 1.0 / math.sqrt(d)
    fn = lambda: torch.ops.kernelseek.flash_forward(  # noqa: E731
        q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), qd, kd, vd, causal, scale
    )
    poison_allocator(q.numel())
    out = fn()
    torch.cuda.synchronize()
    g = hq // hk
    refs, pairs = [], 0
    for i in range(b):
        q0, q1 = sum(lens_q[:i]), sum(lens_q[: i + 1])
        k0, k1 = sum(lens_k[:i]), sum(lens_k[: i + 1])
        qi = dequant(q[None, q0:q1], None if qd is None else qd[i : i + 1], g)[0]
        ki = dequant(k[None, k0:k1], None if kd is None else kd[i : i + 1], 1)[0]
        vi = dequant(v[None, k0:k1], None if vd is None else vd[i : i + 1], 1)[0]
        refs.append(ref_attention(qi, ki, vi, causal, scale))
        pairs += attended_pairs(lens_q[i], lens_k[i], causal)
    ref = torch.cat(refs, dim=0)
    ms = time_call(fn, reps)
    report(name, out, ref, ms, 4 * hq * d * pairs, out.shape == q.shape)


def case_kvcache(cache_lens, capacity, sq, seqlen_new, hq, hk, d, causal, dtype=BF16, reps=10):
    b = len(cache_lens)
    name = f"kvcache {'fp8' if dtype == FP8 else 'bf16'} b{b} sq{sq} new{seqlen_new} cap{capacity}"
    name += f" h{hq}:{hk} d{d}" + (" causal" if causal else "")
    q = rand_inputs((b, sq, hq, d), dtype)
    k_cache = rand_inputs((b, capacity, hk, d), dtype)
    v_cache = rand_inputs((b, capacity, hk, d), dtype)
    k_cache0, v_cache0 = k_cache.clone(), v_cache.clone()
    cs = torch.tensor(cache_lens, dtype=torch.int32, device=DEV)
    k_new = v_new = None
    if seqlen_new > 0:
        k_new = rand_inputs((b, seqlen_new, hk, d), dtype)
        v_new = rand_inputs((b, seqlen_new, hk, d), dtype)
    qd, kd, vd = rand_descales(b, hk, dtype)
    scale = 1.0 / math.sqrt(d)
    fn = lambda: torch.ops.kernelseek.flash_forward_kvcache(  # noqa: E731
        q, k_cache, v_cache, cs, k_new, v_new, qd, kd, vd, causal, scale
    )
    poison_allocator(q.numel())
    out = fn()
    torch.cuda.synchronize()

    # The append must have happened in place, and nothing else in the cache may change.
    exp_k, exp_v = k_cache0.clone(), v_cache0.clone()
    for i in range(b):  # byte views: plain copies, whatever the dtype
        if seqlen_new > 0:
            rows = slice(cache_lens[i], cache_lens[i] + seqlen_new)
            exp_k.view(torch.uint8)[i, rows] = k_new.view(torch.uint8)[i]
            exp_v.view(torch.uint8)[i, rows] = v_new.view(torch.uint8)[i]
    append_ok = bool(
        torch.equal(k_cache.view(torch.uint8), exp_k.view(torch.uint8))
        and torch.equal(v_cache.view(torch.uint8), exp_v.view(torch.uint8))
    )

    g = hq // hk
    refs, pairs, kv_bytes = [], 0, 0
    for i in range(b):
        sk = cache_lens[i] + seqlen_new
        qi = dequant(q[i : i + 1], None if qd is None else qd[i : i + 1], g)[0]
        ki = dequant(exp_k[i : i + 1, :sk], None if kd is None else kd[i : i + 1], 1)[0]
        vi = dequant(exp_v[i : i + 1, :sk], None if vd is None else vd[i : i + 1], 1)[0]
        refs.append(ref_attention(qi, ki, vi, causal, scale))
        pairs += attended_pairs(sq, sk, causal)
        kv_bytes += 2 * sk * hk * d * k_cache.element_size()
    ref = torch.stack(refs)
    ms = time_call(fn, reps)
    gbs = kv_bytes / (ms * 1e-3) / 1e9 if ms == ms and ms > 0 else float("nan")
    report(
        name,
        out,
        ref,
        ms,
        4 * hq * d * pairs,
        append_ok and out.shape == q.shape,
        f"KV {gbs:6.0f} GB/s  append {'ok' if append_ok else 'WRONG'}",
    )


def all_cases():
    cases = []
    add = lambda f, *a, **kw: cases.append((f, a, kw))  # noqa: E731
    # every head_dim, causal and not, odd lengths
    for d in (64, 96, 128, 192, 256):
        add(case_dense, 2, 1000, 1000, 4, 4, d, False)
        add(case_dense, 2, 1000, 1000, 4, 4, d, True)
        add(case_dense, 1, 77, 77, 2, 1, d, True)
    # seqlen_q < seqlen_k, seqlen_q > seqlen_k (rows that see no key under causal)
    add(case_dense, 2, 77, 1000, 4, 2, 128, True)
    add(case_dense, 2, 77, 1000, 4, 2, 128, False)
    add(case_dense, 1, 300, 128, 4, 4, 64, True)
    add(case_dense, 1, 300, 128, 4, 4, 256, True)
    add(case_dense, 1, 1, 513, 4, 4, 128, True)
    add(case_dense, 3, 64, 64, 2, 2, 96, True)
    # GQA 32:8, MQA 16:1
    add(case_dense, 1, 1000, 1000, 32, 8, 128, True)
    add(case_dense, 2, 513, 700, 16, 1, 64, False)
    add(case_dense, 1, 333, 333, 16, 1, 192, True)
    # peaky scores (exercise the online-softmax rescaling)
    add(case_dense, 1, 1000, 1000, 4, 4, 128, False, gen_scale=4.0, tag=" peaky")
    add(case_dense, 1, 1000, 1000, 4, 4, 128, True, gen_scale=4.0, tag=" peaky")
    # fp8 with random descales
    for d in (64, 96, 128, 192, 256):
        add(case_dense, 2, 333, 1000, 8, 2, d, d % 128 == 0, dtype=FP8)
    add(case_dense, 1, 1000, 1000, 32, 8, 128, True, dtype=FP8)
    add(case_dense, 1, 1000, 1000, 16, 1, 64, False, dtype=FP8)
    # varlen with random lengths (one zero-length sequence)
    torch.manual_seed(1)
    lq = [int(x) for x in torch.randint(1, 1200, (6,))]
    lk = [x + int(y) for x, y in zip(lq, torch.randint(0, 300, (6,)), strict=True)]
    lq[3], lk[3] = 0, 5
    for d in (64, 128, 256):
        add(case_varlen, lq, lk, 8, 2, d, True)
        add(case_varlen, lq, lq, 8, 8, d, False)
    add(case_varlen, lq, lk, 32, 8, 128, True, dtype=FP8)
    add(case_varlen, lq, lq, 16, 1, 96, False, dtype=FP8)
    add(case_varlen, [1000, 77, 1, 640], [1000, 77, 1, 640], 4, 4, 192, True)
    # kv-cache decode with ragged lengths (one empty), no append
    add(case_kvcache, [0, 5, 1000, 4097], 5000, 1, 0, 32, 8, 128, True)
    add(case_kvcache, [3, 700, 64, 2049], 4096, 1, 0, 16, 1, 64, False)
    add(case_kvcache, [100, 2000], 2048, 8, 0, 8, 8, 256, True)
    # kv-cache with append: decode, speculative decode, chunked prefill
    add(case_kvcache, [0, 5, 1000, 4000], 4096, 1, 1, 32, 8, 128, True)
    add(case_kvcache, [17, 900, 3000], 4096, 8, 8, 32, 8, 128, True)
    add(case_kvcache, [0, 129, 1500], 2048, 64, 64, 16, 4, 64, True)
    add(case_kvcache, [1, 1000], 2048, 64, 64, 8, 2, 192, False)
    add(case_kvcache, [512, 3000], 8192, 2048, 2048, 8, 2, 128, True, reps=3)
    add(case_kvcache, [5, 4000], 4096, 8, 8, 8, 1, 96, True)
    add(case_kvcache, [5, 4000], 4100, 8, 8, 8, 8, 256, True)
    # fp8 kv-cache (with and without append)
    add(case_kvcache, [0, 33, 1000, 4000], 4096, 1, 1, 32, 8, 128, True, dtype=FP8)
    add(case_kvcache, [7, 2500], 4096, 64, 0, 16, 2, 64, True, dtype=FP8)
    add(case_kvcache, [7, 2500], 4096, 8, 8, 8, 8, 256, False, dtype=FP8)
    # larger shapes for rough timing
    add(case_dense, 2, 4096, 4096, 16, 16, 128, True, reps=5)
    add(case_dense, 1, 8192, 8192, 8, 2, 128, False, reps=3)
    add(case_dense, 1, 16384, 16384, 4, 4, 64, True, reps=2)
    add(case_dense, 2, 4096, 4096, 16, 16, 128, True, dtype=FP8, reps=5)
    add(case_kvcache, [100000, 131000], 131072, 1, 1, 8, 1, 128, True, reps=5)
    add(case_kvcache, [60000, 65536, 1, 30000], 65536, 1, 0, 32, 8, 128, True, reps=5)
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="", help="run only cases whose function name contains this")
    ap.add_argument("--no-time", action="store_true", help="skip the timing repetitions")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    build()
    torch.manual_seed(0)
    for fn, a, kw in all_cases():
        if args.filter and args.filter not in fn.__name__:
            continue
        if args.no_time:
            kw = dict(kw, reps=0)
        try:
            fn(*a, **kw)
        except Exception as e:  # a crash is a failure of that case; keep going
            print(f"FAIL  {fn.__name__}{a}: {type(e).__name__}: {e}", flush=True)
            RESULTS.append(False)
            torch.cuda.synchronize()
    n_fail = RESULTS.count(False)
    if n_fail == 0 and RESULTS:
        print(f"ALL PASS ({len(RESULTS)} cases)")
        return 0
    print(f"{n_fail} of {len(RESULTS)} cases FAILED")
    return 1


if __name__ == "__main__":
    sys.exit(main())
