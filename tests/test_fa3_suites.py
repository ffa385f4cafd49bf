"""fa3_hopper pieces that need no GPU: suites, parameters, inputs, reference, upstream rules."""

import collections
import dataclasses
import json
import pathlib

import pytest
import torch

from evals.harness import get_target
from evals.harness.measurement.gpu import Ceilings
from evals.harness.targets.attention import reference_attention
from evals.targets.fa3_hopper import problem
from evals.targets.fa3_hopper.problem import Fa3Params


@pytest.fixture(scope="module")
def target():
    return get_target("fa3_hopper")


def test_dev_and_full_suites(target):
    dev, full = target.load_suite("dev"), target.load_suite("full")
    # the study's 26 and 182, then the contract scenarios of integrity II
    assert len(dev.scenarios) == 26 + 6 and len(full.scenarios) == 182 + 12
    assert len(set(full.ids)) == 194
    assert set(dev.ids) <= set(full.ids)
    # dev scenarios are identical in both files
    by_id = {s.id: s for s in full.scenarios}
    assert all(dict(by_id[s.id].params) == dict(s.params) for s in dev.scenarios)
    cats = collections.Counter(s.params["category"] for s in full.scenarios)
    assert cats == {"prefill": 60, "gqa": 12, "fp8": 18, "varlen": 6, "decode": 40,
                    "ragged": 6, "fp8decode": 4, "spec": 24, "chunk": 8, "long": 4,
                    "contract": 12}
    assert [s.params["category"] for s in dev.scenarios[26:]] == ["contract"] * 6


def test_dev_suite_matches_the_specified_26(target):
    study = [s for s in target.load_suite("dev").scenarios if s.params["category"] != "contract"]
    ps = [Fa3Params.from_params(s.params) for s in study]
    assert len(ps) == 26
    prefill = [p for p in ps if p.kind == "prefill" and p.dtype == "bfloat16"]
    assert len(prefill) == 14
    for p in prefill:
        assert p.batch * p.seqlen_q == 16384  # token budget 16k
    mha = [p for p in prefill if p.heads_q == p.heads_kv]
    assert {(p.head_dim, p.seqlen_q, p.causal) for p in mha} == {
        (d, s, c) for d in (64, 128, 256) for s in (1024, 8192) for c in (False, True)}
    assert all(p.heads_q * p.head_dim == 2048 for p in mha)
    fp8 = [p for p in ps if p.fp8]
    assert {(p.head_dim, p.causal, p.batch, p.seqlen_q) for p in fp8} == {
        (d, c, 2, 8192) for d in (128, 256) for c in (False, True)}
    decode = [(p.batch, p.cache_len) for p in ps if p.category == "decode" and p.heads_kv == 8]
    assert decode == [(1, 8192), (1, 131072), (8, 32768), (64, 8192)]
    ragged = [p for p in ps if p.ragged_min is not None]
    assert len(ragged) == 1 and ragged[0].heads_q == 64 and ragged[0].batch == 32
    spec = next(p for p in ps if p.category == "spec")
    assert (spec.seqlen_q, spec.batch, spec.cache_len, spec.causal, spec.append) == (
        8, 16, 16384, True, True)


def test_every_scenario_parses_and_has_work(target):
    for s in target.load_suite("full").scenarios:
        w = target.work(s)
        assert w.flops > 0 and w.bytes > 0
        out = target.expected_output(s)
        assert out.dtype == torch.bfloat16 and out.device == "cuda"


def _tiny(**kw):
    base = dict(kind="prefill", category="t", dtype="bfloat16", batch=2, heads_q=4, heads_kv=2,
                head_dim=64, causal=True, seqlen_q=5, seqlen_k=9)
    return Fa3Params.from_params({**base, **kw})


def test_prefill_reference_matches_dense_reference():
    p = _tiny()
    inputs = problem.make_inputs(p, 1, device="cpu")
    ref = problem.reference(p, inputs)
    direct = reference_attention(inputs["q"], inputs["k"], inputs["v"], causal=True,
                                 softmax_scale=p.softmax_scale)
    assert torch.allclose(ref, direct)


def test_reference_chunks_queries_with_bottom_right_mask(monkeypatch):
    p = _tiny(seqlen_q=40, seqlen_k=50)
    inputs = problem.make_inputs(p, 2, device="cpu")
    whole = problem.reference(p, inputs)
    monkeypatch.setattr(problem, "REFERENCE_CHUNK_ELEMENTS", 4 * 50 * 7)  # 7 rows per chunk
    assert torch.allclose(problem.reference(p, inputs), whole)


@pytest.mark.parametrize("limit", [64 * 9 * 3, 2 * 9 * 40 * 2, 1 << 27])
def test_reference_chunks_over_sequences_heads_and_rows_give_the_same_result(monkeypatch, limit):
    # small limits force one sequence, one KV head and a few rows per call; large ones batch all
    p = _tiny(batch=3, heads_q=8, heads_kv=4, seqlen_q=40, seqlen_k=9 + 40 - 5, causal=True)
    inputs = problem.make_inputs(p, 5, device="cpu")
    per_sequence = [reference_attention(inputs["q"][b : b + 1], inputs["k"][b : b + 1],
                                        inputs["v"][b : b + 1], causal=True,
                                        softmax_scale=p.softmax_scale) for b in range(3)]
    monkeypatch.setattr(problem, "REFERENCE_CHUNK_ELEMENTS", limit)
    assert torch.allclose(problem.reference(p, inputs), torch.cat(per_sequence))


def test_causal_row_chunks_come_widest_first(monkeypatch):
    # narrower chunks after the widest reuse its cached GPU blocks; growing ones reserved each
    # new size anew (54 GiB on a 64k-token causal prefill)
    p = _tiny(batch=1, heads_q=2, heads_kv=1, seqlen_q=40, seqlen_k=50)
    inputs = problem.make_inputs(p, 2, device="cpu")
    widths: list[int] = []

    def spy(q, k, v, **kw):
        widths.append(k.shape[1])
        return reference_attention(q, k, v, **kw)

    whole = problem.reference(p, inputs)
    monkeypatch.setattr(problem, "REFERENCE_CHUNK_ELEMENTS", 2 * 50 * 5)  # 5 rows per chunk
    monkeypatch.setattr(problem, "reference_attention", spy)
    assert torch.allclose(problem.reference(p, inputs), whole)
    assert widths == [50, 45, 40, 35, 30, 25, 20, 15]


def test_uniform_kvcache_batches_sequences_like_one_at_a_time(monkeypatch):
    p = Fa3Params.from_params(dict(kind="kvcache", category="t", dtype="float8_e4m3fn", batch=4,
                                   heads_q=16, heads_kv=1, head_dim=64, causal=False,
                                   seqlen_q=1, cache_len=30))
    inputs = problem.make_inputs(p, 6, device="cpu")
    together = problem.reference(p, inputs)
    monkeypatch.setattr(problem, "REFERENCE_CHUNK_ELEMENTS", 30 * 64)  # one sequence a call
    assert torch.allclose(problem.reference(p, inputs), together)


def test_fp8_inputs_round_trip_through_descales():
    p = _tiny(dtype="float8_e4m3fn", causal=False, seqlen_q=8, seqlen_k=8)
    inputs = problem.make_inputs(p, 3, device="cpu")
    assert inputs["q"].dtype == torch.float8_e4m3fn and inputs["q_descale"].shape == (2, 2)
    deq = problem.dequantize(inputs["k"], inputs["k_descale"])
    assert deq.abs().max() > 1.0  # real magnitudes, not the fp8 codes' scale


def test_kvcache_reference_appends_and_respects_ragged_lengths():
    p = Fa3Params.from_params(dict(kind="kvcache", category="t", dtype="bfloat16", batch=3,
                                   heads_q=4, heads_kv=1, head_dim=64, causal=True, seqlen_q=3,
                                   cache_len=20, ragged_min=5, append=True))
    inputs = problem.make_inputs(p, 4, device="cpu")
    lens = inputs["cache_seqlens"].tolist()
    assert all(5 <= n <= 20 for n in lens) and inputs["k_cache"].shape[1] == 23
    ref = problem.reference(p, inputs)
    b = 1
    keys = torch.cat([inputs["k_cache"][b, : lens[b]], inputs["k_new"][b]])[None]
    vals = torch.cat([inputs["v_cache"][b, : lens[b]], inputs["v_new"][b]])[None]
    expect = reference_attention(inputs["q"][b : b + 1], keys, vals, causal=True,
                                 softmax_scale=p.softmax_scale)
    assert torch.allclose(ref[b], expect[0])


def test_timing_sets_share_the_cache_but_not_q():
    p = Fa3Params.from_params(dict(kind="kvcache", category="t", dtype="bfloat16", batch=2,
                                   heads_q=4, heads_kv=2, head_dim=64, causal=False, seqlen_q=1,
                                   cache_len=16))
    sets = problem.make_timing_inputs(p, [1, 2, 3], device="cpu")
    assert all(s["k_cache"] is sets[0]["k_cache"] for s in sets)
    assert not torch.equal(sets[0]["q"], sets[1]["q"])


def test_sdpa_upstreams_declare_what_they_cannot_run(target):
    full = {s.id: s for s in target.load_suite("full").scenarios}
    cudnn = target.upstream("cudnn")
    reasons = collections.Counter(
        bool(cudnn.unsupported_reason(s)) for s in full.values())
    assert reasons[True] > 0 and reasons[False] > 0
    ragged = next(s for s in full.values() if s.params.get("ragged_min"))
    assert "cache lengths" in cudnn.unsupported_reason(ragged)
    fp8 = next(s for s in full.values() if s.params["dtype"] == "float8_e4m3fn")
    assert "fp8" in cudnn.unsupported_reason(fp8)


def test_fa3_missing_is_reported_not_raised(target):
    fa3 = target.upstream("fa3")
    try:
        import fa3_fwd_interface  # noqa: F401
    except ImportError:
        s = target.load_suite("dev").scenarios[0]
        assert "not importable" in fa3.unsupported_reason(s)


H200_RUNS = pathlib.Path(__file__).parents[1] / "results/measurements/h200/2026-11-30-d"


@pytest.mark.parametrize("run", ["call1/start-full.json", "call2/start-full.json"])
def test_roofline_floor_stays_under_every_upstream_time_measured_on_the_h200(target, run):
    # FA3, cuDNN and FA2 read big KV caches faster than torch's copy kernel moves bytes: under
    # the bare copy-rate floor FA3 itself was "implausible" on decode b64 c128k (0.94x the floor)
    verdict = json.loads((H200_RUNS / run).read_text())
    measured = verdict["provenance"]["ceilings"]
    ceilings = Ceilings(matmul_tflops=measured["matmul_tflops"], copy_gbps=measured["copy_gbps"])
    bare = dataclasses.replace(ceilings, headroom=1.0)
    by_id = {s.id: s for s in target.load_suite("full").scenarios}
    ratios, bare_ratios = [], []
    for row in verdict["scenarios"]:
        floor = target.floor_us(by_id[row["id"]], ceilings)
        bare_floor = target.floor_us(by_id[row["id"]], bare)
        for name, stats in row["times_us"].items():
            if name != "candidate":
                ratios.append(stats["min_us"] / floor)
                bare_ratios.append(stats["min_us"] / bare_floor)
    assert len(ratios) > 400
    assert min(bare_ratios) < 1.0 < min(ratios)  # the bare floor failed upstreams; this one not
