"""Integrity II (C), fa3_hopper: the new input kinds and their float64 reference, run on small
CPU tensors against a naive per-row attention (no GPU needed); the KV-cache append check."""

import itertools
import math

import pytest
import torch

from evals.harness.failures import Code
from evals.harness.targets.guards import InputGuard
from evals.targets.fa3_hopper import problem
from evals.targets.fa3_hopper.problem import Fa3Params


def naive(q, k, v, causal, scale):
    """Row by row float64 attention; q (sq, hq, d), k, v (sk, hkv, d); bottom-right causal."""
    sq, hq, d = q.shape
    sk, hkv = k.shape[0], k.shape[1]
    out = torch.zeros(sq, hq, d, dtype=torch.float64)
    for i, h in itertools.product(range(sq), range(hq)):
        n = min(sk, max(0, i + sk - sq + 1)) if causal else sk
        if n == 0:
            continue  # a row that attends no key is zero (the contract)
        g = h // (hq // hkv)
        s = (k[:n, g].double() @ q[i, h].double()) * scale
        p = torch.softmax(s, dim=0)
        out[i, h] = p @ v[:n, g].double()
    return out


def params(**kw):
    base = dict(category="t", dtype="bfloat16", batch=2, heads_q=4, heads_kv=2, head_dim=64,
                causal=True)
    return Fa3Params.from_params({**base, **kw})


def _drawn(suite, seed):
    """(target, scenario, params, CPU inputs) of each contract scenario drawn for ``suite``."""
    from evals.harness import get_target
    from evals.harness.contract.contract_draw import drawn_scenarios

    target = get_target("fa3_hopper")
    for scenario in drawn_scenarios(target, suite, seed):
        p = target.params(scenario)
        yield target, scenario, p, problem.make_inputs(p, seed=seed, device="cpu")


@pytest.mark.parametrize(("sq", "sk"), [(1, 37), (17, 61), (61, 17), (5, 5)])
def test_prefill_reference_is_bottom_right_causal_with_any_lengths_and_scale(sq, sk):
    p = params(kind="prefill", seqlen_q=sq, seqlen_k=sk, scale=0.37)
    i = problem.make_inputs(p, seed=3, device="cpu")
    assert i["softmax_scale"] == 0.37
    ref = problem.reference(p, i)
    for b in range(p.batch):
        assert torch.allclose(ref[b], naive(i["q"][b], i["k"][b], i["v"][b], True, 0.37))


def test_varlen_reference_uses_distinct_key_lengths():
    p = params(kind="varlen", batch=3, seqlens=[7, 1, 30], seqlens_k=[19, 13, 2])
    i = problem.make_inputs(p, seed=4, device="cpu")
    assert i["cu_seqlens"].tolist() == [0, 7, 8, 38]
    assert i["cu_seqlens_k"].tolist() == [0, 19, 32, 34] and i["max_seqlen_k"] == 19
    assert i["k"].shape[0] == 34 and i["q"].shape[0] == 38
    ref = problem.reference(p, i)
    cu_q, cu_k = i["cu_seqlens"].tolist(), i["cu_seqlens_k"].tolist()
    for (qa, qb), (ka, kb) in zip(itertools.pairwise(cu_q), itertools.pairwise(cu_k),
                                  strict=True):
        want = naive(i["q"][qa:qb], i["k"][ka:kb], i["v"][ka:kb], True, p.softmax_scale)
        assert torch.allclose(ref[qa:qb], want)
    flops, _ = problem.work(p)
    pairs = sum(min(sk, max(0, r + sk - sq + 1)) for sq, sk in
                zip(p.seqlens, p.seqlens_k, strict=True) for r in range(sq))
    assert flops == 4.0 * pairs * p.heads_q * p.head_dim


def test_fp8_descales_differ_across_batch_and_heads_and_the_reference_dequantises():
    p = params(kind="prefill", dtype="float8_e4m3fn", batch=3, heads_kv=2, seqlen_q=9,
               seqlen_k=23, descale_spread=3.0)
    i = problem.make_inputs(p, seed=5, device="cpu")
    for name in ("q", "k", "v"):
        d = i[f"{name}_descale"]
        assert d.shape == (3, 2)
        assert float(d.max() / d.min()) > 4.0, d  # 2**(+-3) spread, not nearly equal
    ref = problem.reference(p, i)
    for b in range(p.batch):
        deq = {n: problem.dequantize(i[n][b:b + 1], i[f"{n}_descale"][b:b + 1])[0]
               for n in ("q", "k", "v")}
        assert torch.allclose(ref[b], naive(deq["q"], deq["k"], deq["v"], True, p.softmax_scale))


def test_old_fp8_scenarios_keep_their_inputs():
    # the spread is opt-in: scenarios without it draw exactly what they drew before
    p = params(kind="prefill", dtype="float8_e4m3fn", seqlen_q=8, seqlen_k=8)
    i = problem.make_inputs(p, seed=6, device="cpu")
    gen = torch.Generator(device="cpu").manual_seed(6)
    q = torch.randn((2, 8, 4, 64), generator=gen, dtype=torch.bfloat16)
    q8, descale = problem._quantize(q, 2)
    assert torch.equal(i["q"].view(torch.uint8), q8.view(torch.uint8))
    assert torch.equal(i["q_descale"], descale)


def test_large_qk_scores_overflow_exp_and_the_reference_stays_finite():
    p = params(kind="prefill", seqlen_q=16, seqlen_k=16, qk_std=8.0, causal=False)
    i = problem.make_inputs(p, seed=7, device="cpu")
    scores = torch.einsum("qhd,khd->hqk", i["q"][0, :, :2].double(), i["k"][0].double())
    assert float(scores.max()) * p.softmax_scale > 88.7  # float32 exp overflows past 88.7
    ref = problem.reference(p, i)
    assert torch.isfinite(ref).all()
    assert torch.allclose(ref[0], naive(i["q"][0], i["k"][0], i["v"][0], False, p.softmax_scale))


def _kv_inputs():
    p = params(kind="kvcache", batch=3, seqlen_q=4, cache_len=20, ragged_min=5, append=True)
    return p, problem.make_inputs(p, seed=8, device="cpu")


def _append(i):
    for b, start in enumerate(i["cache_seqlens"].tolist()):
        i["k_cache"][b, start:start + 4] = i["k_new"][b]
        i["v_cache"][b, start:start + 4] = i["v_new"][b]


def test_kvcache_reference_attends_the_appended_keys():
    p, i = _kv_inputs()
    ref = problem.reference(p, i)
    _append(i)
    for b, n in enumerate(i["cache_seqlens"].tolist()):
        want = naive(i["q"][b], i["k_cache"][b, :n + 4], i["v_cache"][b, :n + 4], True,
                     p.softmax_scale)
        assert torch.allclose(ref[b], want)


def test_the_cache_after_an_append_is_checked_against_the_contract():
    checks = {"k_cache": problem.check_append, "v_cache": problem.check_append}
    _, i = _kv_inputs()
    guard = InputGuard(i, checks)
    _append(i)
    assert guard.modified() is None  # the contract's append
    _, i = _kv_inputs()
    guard = InputGuard(i, checks)
    assert "do not hold the appended keys" in guard.modified().reason  # no append at all
    _, i = _kv_inputs()
    guard = InputGuard(i, checks)
    _append(i)
    i["v_cache"][1, -1] += 1  # a row past the append (scratch space in the cache)
    failure = guard.modified()
    assert failure.code == Code.INACCURATE and "outside the append" in failure.reason
    _, i = _kv_inputs()
    guard = InputGuard(i, checks)
    _append(i)
    i["q"].add_(1)
    assert guard.modified().code == Code.INPUT_MODIFIED  # other inputs stay guarded


def _fp8_kv_inputs(seed=8):
    p = params(kind="kvcache", dtype="float8_e4m3fn", batch=3, seqlen_q=4, cache_len=20,
               ragged_min=5, append=True, descale_spread=2.0)
    return p, problem.make_inputs(p, seed=seed, device="cpu")


def test_fp8_appends_arrive_in_the_caches_dtype_and_descale():
    # FA3 (the baseline) refuses k_new/v_new of another dtype than q: with bf16 rows for an
    # fp8 cache, kernels that require one dtype (start.cu) failed every drawn fp8 append and a
    # byte-copying kernel read garbage
    p, i = _fp8_kv_inputs()
    for name in ("k_new", "v_new"):
        assert i[name].dtype == i["q"].dtype == i["k_cache"].dtype == torch.float8_e4m3fn
    ref = problem.reference(p, i)
    checks = {"k_cache": problem.check_append, "v_cache": problem.check_append}
    guard = InputGuard(i, checks)
    _append(i)
    assert guard.modified() is None  # the byte copy is the contract's append
    k, v = (problem.dequantize(i[n], i[f"{n[0]}_descale"]) for n in ("k_cache", "v_cache"))
    q = problem.dequantize(i["q"], i["q_descale"])
    for b, n in enumerate(i["cache_seqlens"].tolist()):
        want = naive(q[b], k[b, :n + 4], v[b, :n + 4], True, p.softmax_scale)
        assert torch.allclose(ref[b], want)
    _, i = _fp8_kv_inputs()
    guard = InputGuard(i, checks)
    _append(i)
    i["k_cache"].view(torch.uint8)[0, int(i["cache_seqlens"][0])] ^= 1  # one bit of the append
    assert "do not hold the appended keys" in guard.modified().reason


def test_fp8_timing_sets_quantise_their_appends_with_the_shared_caches_descales():
    p, _ = _fp8_kv_inputs()
    first, *rest = problem.make_timing_inputs(p, [1, 2, 3], device="cpu")
    for s in rest:
        assert s["k_cache"] is first["k_cache"] and s["k_descale"] is first["k_descale"]
        assert s["k_new"].dtype == torch.float8_e4m3fn
        assert not torch.equal(s["k_new"].view(torch.uint8), first["k_new"].view(torch.uint8))
        # the fresh rows are those of the set's own seed, quantised with the shared descale
        own = problem.make_inputs(p, 2 if s is rest[0] else 3, "cpu", with_cache=False,
                                  new_descales=(first["k_descale"], first["v_descale"]))
        assert torch.equal(s["k_new"].view(torch.uint8), own["k_new"].view(torch.uint8))


@pytest.mark.parametrize("seed", range(40))
def test_drawn_inputs_meet_fa3s_interface(seed):
    # what FA3's interface checks before it runs: one dtype for q, k, v and the appends,
    # float32 descales per (batch, kv head), int32 lengths; a draw that breaks one of these
    # is a scenario the baseline cannot judge (and honest kernels that follow FA3 refuse)
    for _, scenario, p, i in _drawn("smoke", seed):
        key, val = ("k_cache", "v_cache") if p.kind == "kvcache" else ("k", "v")
        appends = [i[n] for n in ("k_new", "v_new") if i.get(n) is not None]
        tensors = [i["q"], i[key], i[val], *appends]
        assert {t.dtype for t in tensors} == {i["q"].dtype}, scenario.id
        for n in ("q_descale", "k_descale", "v_descale"):
            d = i.get(n)
            assert d is None if not p.fp8 else (d.dtype == torch.float32
                                                and d.shape == (p.batch, p.heads_kv)), scenario.id
        for n in ("cache_seqlens", "cu_seqlens", "cu_seqlens_k"):
            assert i.get(n) is None or i[n].dtype == torch.int32, scenario.id
        if appends:  # FA3: "k_new must have seqlen <= the seqlen of the KV cache"
            assert i["q"].shape[1] <= i["k_cache"].shape[1], scenario.id


def test_fa3_suites_hold_every_new_kind():
    from evals.harness import get_target

    target = get_target("fa3_hopper")
    for name in ("smoke", "dev", "full"):
        ps = [Fa3Params.from_params(s.params) for s in target.load_suite(name).scenarios]
        assert any(p.kind == "prefill" and p.causal and p.seqlen_q != p.seqlen_k for p in ps)
        assert any(p.kind == "varlen" and p.seqlens_k and p.seqlens_k != p.seqlens for p in ps)
        assert any(p.scale is not None and p.scale != 1 / math.sqrt(p.head_dim) for p in ps)
        assert any(p.fp8 and p.descale_spread >= 2 for p in ps)
        assert any(p.kind == "kvcache" and p.append for p in ps)
        assert any(p.qk_std >= 8 for p in ps)
        odd = [x for p in ps for x in (p.seqlen_q, p.seqlen_k, *p.seqlens, *p.seqlens_k) if x]
        assert 1 in odd and any(x > 64 and all(x % t for t in (2, 3, 5)) for x in odd), name


def dense(q, k, v, causal, scale):
    """``naive`` for many rows at once (einsum over all heads); rows with no key are zero."""
    sq, hq, _ = q.shape
    sk, hkv = k.shape[0], k.shape[1]
    kx, vx = (t.double().repeat_interleave(hq // hkv, dim=1) for t in (k, v))
    s = torch.einsum("qhd,khd->hqk", q.double(), kx) * scale
    if causal:
        keep = torch.arange(sk)[None, :] <= torch.arange(sq)[:, None] + sk - sq
        s = s.masked_fill(~keep, -math.inf)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.einsum("hqk,khd->qhd", p, vx)


def _naive_any(p, i):
    """The dense reference of any fa3 input set, sequence by sequence (dequantised)."""
    if p.kind == "varlen":
        cu_q, cu_k = i["cu_seqlens"].tolist(), i["cu_seqlens_k"].tolist()
        return torch.cat([dense(i["q"][qa:qb], i["k"][ka:kb], i["v"][ka:kb], p.causal,
                                p.softmax_scale)
                          for (qa, qb), (ka, kb) in zip(itertools.pairwise(cu_q),
                                                        itertools.pairwise(cu_k), strict=True)])
    key, val = ("k", "v") if p.kind == "prefill" else ("k_cache", "v_cache")
    q, k, v = (problem.dequantize(i[n], i[f"{n[0]}_descale"]) for n in ("q", key, val))
    if p.append:
        k_new, v_new = (problem.dequantize(i[n], i[f"{n[0]}_descale"]) for n in ("k_new", "v_new"))
    outs = []
    for b in range(p.batch):
        n = p.seqlen_k if p.kind == "prefill" else int(i["cache_seqlens"][b])
        kb, vb = k[b, :n], v[b, :n]
        if p.append:
            kb = torch.cat([kb, k_new[b]])
            vb = torch.cat([vb, v_new[b]])
        outs.append(dense(q[b], kb, vb, p.causal, p.softmax_scale))
    return torch.stack(outs)


@pytest.mark.parametrize("seed", range(2))
def test_the_reference_covers_every_drawn_contract_scenario(seed):
    # integrity III: any heads and groups, rows that see no key (zeros), negative, tiny and
    # large scales, values up to 2^86, fp8 with spread descales, varlen and ragged caches
    for target, scenario, p, i in _drawn("full", seed):
        ref = problem.reference(p, i)
        want = _naive_any(p, i)
        assert torch.isfinite(ref).all(), scenario.id
        scale = float(want.abs().max()) or 1.0
        assert float((ref - want).abs().max()) <= 1e-9 * scale, scenario.id
        if p.kind == "prefill" and p.causal and p.seqlen_q > p.seqlen_k:
            assert not ref[:, : p.seqlen_q - p.seqlen_k].any()  # rows with no key are zeros
        target.rewrite_kv_part(scenario, i, seed + 100)  # the probe's edit moves the result
        assert float((problem.reference(p, i) - ref).abs().max()) > 0.1 * scale, scenario.id


@pytest.mark.parametrize("seed", range(2))
def test_a_block_of_heads_has_the_reference_of_those_heads(seed):
    # the sampled integrity checks compute the float64 reference of a block of KV heads alone:
    # it must be the whole reference's slice on every drawn kind (fp8 descales cut with it)
    for target, scenario, p, i in _drawn("full", seed):
        whole = problem.reference(p, i)
        group = p.heads_q // p.heads_kv
        for kv in (slice(0, 1), slice(p.heads_kv - 1, p.heads_kv), slice(0, p.heads_kv)):
            sub_scenario, sub = target.head_block(scenario, i, kv)
            assert target.heads(sub_scenario) == ((kv.stop - kv.start) * group, kv.stop - kv.start)
            block = problem.reference(target.params(sub_scenario), sub)
            q_heads = slice(kv.start * group, kv.stop * group)
            want = whole[..., q_heads, :]
            # float64 rounding only: a matmul over fewer heads may take another BLAS path
            # (seen under load), so bit-for-bit equality is not the contract
            scale = float(want.abs().max()) or 1.0
            assert torch.equal(block.isnan(), want.isnan()), (scenario.id, kv)
            gap = (block - want).nan_to_num().abs().max()
            assert float(gap) <= 1e-12 * scale, (scenario.id, kv, float(gap), scale)
