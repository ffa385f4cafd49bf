"""The one private torch API the GPU timer uses is still there (fails loudly on a torch upgrade)."""

import inspect

import torch


def test_torch_still_has_the_spin_kernel_the_gpu_timer_uses():
    sleep = torch.cuda._sleep
    assert callable(sleep) and list(inspect.signature(sleep).parameters) == ["cycles"]
