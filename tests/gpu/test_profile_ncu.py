"""The autonomous arm's ``profile`` tool on a GPU target: its Nsight Compute command runs the
harness under ``ncu`` and returns SpeedOfLight figures of the candidate's kernels
(``pytest -m gpu`` on a host with ``ncu``)."""

import shutil
import subprocess
import sys

import pytest

from evals.harness.tracing.ncu import ncu_command
from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu)")
def test_ncu_command_profiles_the_candidates_kernels():
    cmd = ncu_command([sys.executable, "-P", "-m", "evals.harness"], target="fa3_hopper",
                      kernel=str(ROOT / "kernels" / "fa3_hopper" / "start.cu"), suite="smoke",
                      scenario="smoke-bf16-d128-s512-b2-h8k2-causal")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=540)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "flash_fwd_kernel" in out and "Duration" in out, out[-3000:]
