"""The digest's device sums queued apart from their hashing (what a gated batch queues).

They run on any device; on the CPU they are exercised here with the GPU's arithmetic
(``tests/gpu/test_digest_gpu.py`` checks them against ``digests`` on a GPU).
"""

import pytest
import torch

from evals.harness.clock_checks import digest


@pytest.mark.parametrize("shape", [(1, 3, 5, 7), (2, 512, 4, 128)], ids=["odd", "large"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_queued_sums_hash_each_output_alike_and_bind_every_bit(shape, dtype):
    torch.manual_seed(0)
    outs = [torch.randn(shape).to(dtype) for _ in range(3)]
    sums = digest.device_sums(outs, 7)
    assert sums is not None and sums.shape[0] == 3
    together = digest.hashed(sums, 7)
    alone = [digest.hashed(digest.device_sums([o.clone()], 7), 7)[0] for o in outs]
    assert together == alone and len(set(together)) == 3
    nudged = outs[1].clone()
    bits = nudged.view(-1).view(torch.int16 if dtype == torch.bfloat16 else torch.int32)
    bits[bits.numel() // 2] += 1  # one unit in the last place of one element
    assert digest.hashed(digest.device_sums([nudged], 7), 7)[0] != together[1]
    assert digest.hashed(digest.device_sums([outs[1]], 8), 8)[0] != together[1]  # seeded


def test_float64_outputs_have_no_exact_sums():
    assert digest.device_sums([torch.zeros(4, dtype=torch.float64)], 7) is None
