"""The flips' offsets and the gathered window of a gated batch (query_flips), on the CPU.

A gated batch reads each call's offset on the device and gathers the mask's window; the parent
rebuilds the same call's q by slicing at the host offset. Both must give the same q, for a small
q (every element an offset) and a large one (offsets in grains, gathered row by row).
"""

from __future__ import annotations

import pytest
import torch

from evals.harness.clock_checks import query_flips


@pytest.mark.parametrize("numel", [1, 4093, 2 * query_flips.MIN_OFFSETS - 1,
                                   8 * query_flips.MIN_OFFSETS + 13])  # fmt: skip
def test_the_gathered_window_is_the_sliced_one_at_every_offset_drawn(numel):
    q = torch.randn(numel, dtype=torch.float32).to(torch.bfloat16)
    base, mask = query_flips.base_bits(q), query_flips.make_mask(q, 5)
    step = query_flips.grain(numel)
    offsets = [*query_flips.shifts(9, 6, numel), 0, numel // step * step]  # the largest too
    table = torch.tensor(offsets, dtype=torch.int64)
    rows = query_flips.positions(q)
    for call, shift in enumerate(offsets):
        sliced, gathered = q.clone(), q.clone()
        query_flips.flip(sliced, base, mask, shift)
        query_flips.flip_at(gathered, base, mask, table, call, rows)
        assert torch.equal(sliced.view(torch.int16), gathered.view(torch.int16))
        assert not torch.equal(sliced.view(torch.int16), q.view(torch.int16)) or numel < 8


def test_a_large_q_keeps_enough_offsets_and_a_small_index():
    numel = 8 * query_flips.MIN_OFFSETS + 13
    step = query_flips.grain(numel)
    assert step == 8 and query_flips.grain(2 * query_flips.MIN_OFFSETS - 1) == 1
    drawn = query_flips.shifts(1, 2000, numel)
    assert all(s % step == 0 and 0 <= s <= numel for s in drawn)
    assert len(set(drawn)) > 1900  # drawn from over MIN_OFFSETS values, not a few
    assert numel // step >= query_flips.MIN_OFFSETS
    q = torch.zeros(numel, dtype=torch.bfloat16)
    assert query_flips.positions(q).numel() == -(-numel // step)  # a grain an index, not an element
