"""The honest GPU variants of start.cu against start.cu on the H200: honest_tma.cu (tiles loaded
by TMA and an mbarrier instead of the threads' loads) and honest_autotune.cu (two grid orders
timed on first use) do the same arithmetic, so their outputs must equal start.cu's bitwise on
every head dim and dtype, including tails shorter than a tile, a single key, GQA groups of
three and causal rows that see no key. Each kernel runs in its own process (all register the
``kernelseek`` operators); every call of the autotuned one is a first or a later call of its
shape, both are compared."""

import subprocess
import sys

import pytest

from evals.harness.building.build import build
from evals.harness.targets import get_target
from tests.gpu.conftest import gpu_held
from tests.helpers import ROOT

pytestmark = pytest.mark.gpu

START = ROOT / "kernels" / "fa3_hopper" / "start.cu"
VARIANTS = [
    ROOT / "tests" / "data" / "fa3_hopper" / n for n in ("honest_tma.cu", "honest_autotune.cu")
]

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, fp8)
SHAPES = [
    shape
    for d in (64, 96, 128, 192, 256)
    for shape in (
        (2, 130, 37, 6, 2, d, True, False),  # seqlen_q > seqlen_k: rows that see no key
        (1, 65, 200, 4, 4, d, False, False),  # a tail of 200 % 64 (or 32) keys
        (1, 1, 1, 2, 1, d, False, False),  # one key
        (2, 257, 509, 4, 2, d, True, False),
        (2, 100, 301, 6, 3, d, True, True),  # fp8, a group of 2
        (1, 64, 64, 3, 1, d, False, True),  # fp8, MQA, one full tile
    )
]

RUNNER = """
import sys, torch
torch.ops.load_library(sys.argv[1])
outs = []
for i, (b, sq, sk, hq, hkv, d, causal, fp8) in enumerate(eval(sys.argv[2])):
    g = torch.Generator(device="cuda").manual_seed(i)
    q, k, v = (torch.randn(b, s, h, d, device="cuda", generator=g)
               for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
    scales = [None, None, None]
    if fp8:
        q, k, v = (x.to(torch.float8_e4m3fn) for x in (q, k, v))
        scales = [torch.rand(b, hkv, device="cuda", generator=g) + 0.5 for _ in range(3)]
    else:
        q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    for _ in range(2):  # a first call of the shape, then a later one
        outs.append(torch.ops.kernelseek.flash_forward(q, k, v, None, None, sq, sk, *scales,
                                                       causal, d ** -0.5).cpu())
torch.cuda.synchronize()
torch.save(outs, sys.argv[3])
"""


def _outputs(kernel, tmp_path):
    built = build(get_target("fa3_hopper"), kernel)
    assert built.library is not None, built.failure
    dest = tmp_path / f"{kernel.stem}.pt"
    with gpu_held(shared=True):  # correctness only: beside other runs' checks, never timing
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(built.library), repr(SHAPES), str(dest)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import torch

    return torch.load(dest)


@pytest.fixture(scope="module")
def start_outputs(tmp_path_factory):
    return _outputs(START, tmp_path_factory.mktemp("start"))


@pytest.mark.parametrize("kernel", VARIANTS, ids=lambda p: p.name)
def test_variant_matches_start_bitwise_on_every_head_dim_and_dtype(kernel, start_outputs, tmp_path):
    import torch

    mine = _outputs(kernel, tmp_path)
    assert len(mine) == len(start_outputs) == 2 * len(SHAPES)
    pairs = zip(start_outputs, mine, strict=True)
    differ = [SHAPES[i // 2] for i, (a, b) in enumerate(pairs) if not torch.equal(a, b)]
    assert not differ, differ
    assert all(torch.isfinite(o.float()).all() for o in mine)
