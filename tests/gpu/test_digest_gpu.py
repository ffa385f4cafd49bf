"""The wall-clock check's digests on a GPU (``pytest -m gpu``): exact, binding, and cheap.

The worker digests a batch of small outputs stacked and large ones one at a time; the parent
digests the one output it fetched alone. Integer sums make both the same bytes. The cost is
printed beside a device copy of the same outputs (the figure to read, not asserted).
"""

import time

import pytest
import torch

from evals.harness.clock_checks import digest

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("device_alone")]


@pytest.mark.parametrize("shape", [(1, 1, 32, 128), (1, 61, 21, 128), (2, 4096, 16, 128)],
                         ids=["decode", "small", "prefill-32M"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_a_batch_digest_equals_each_output_digested_alone(shape, dtype):
    torch.manual_seed(0)
    calls = 8 if shape[1] < 4096 else 2
    outs = [torch.randn(shape, device="cuda").to(dtype) for _ in range(calls)]
    together = digest.digests(outs, 7)
    alone = [digest.digests([o.clone()], 7)[0] for o in outs]
    assert together == alone and len(set(together)) == calls
    nudged = outs[1].clone()
    bits = nudged.view(-1).view(torch.int16 if dtype == torch.bfloat16 else torch.int32)
    bits[bits.numel() // 2] += 1  # one unit in the last place of one element
    assert not digest.matches(nudged, together[1], 7)
    assert digest.matches(outs[1].cpu().cuda(), together[1], 7)  # through the host: same bits

    digest.warm(outs[0].numel(), 7, "cuda")
    torch.cuda.synchronize()
    best_digest = best_copy = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        digest.digests(outs, 7)
        torch.cuda.synchronize()
        best_digest = min(best_digest, time.perf_counter() - start)
        start = time.perf_counter()
        copies = [o.clone() for o in outs]
        torch.cuda.synchronize()
        best_copy = min(best_copy, time.perf_counter() - start)
        del copies
    print(f"\n{tuple(shape)} {dtype}: digest {best_digest / calls * 1e6:.1f} us an output, "
          f"a device copy {best_copy / calls * 1e6:.1f} us")


def test_queued_sums_hash_to_the_batch_digests():
    torch.manual_seed(0)
    outs = [torch.randn(1, 61, 21, 128, device="cuda").to(torch.bfloat16) for _ in range(4)]
    assert digest.hashed(digest.device_sums(outs, 7), 7) == digest.digests(outs, 7)
