import socket
import time

import pytest
import torch

from evals.harness import channel


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_tensor_round_trip(dtype):
    t = torch.randn(2, 3, 4).to(dtype)
    meta, payload = channel.tensor_to_wire(t)
    back = channel.tensor_from_wire(meta, payload)
    assert back.dtype == dtype and torch.equal(back, t)


def test_messages_timeouts_and_close():
    a, b = socket.socketpair()
    channel.send(a, {"op": "x"}, b"abc")
    assert channel.recv(b, time.monotonic() + 1) == ({"op": "x"}, b"abc")
    with pytest.raises(TimeoutError):
        channel.recv(b, time.monotonic() + 0.05)
    a.close()
    with pytest.raises(channel.ChannelClosed):
        channel.recv(b, time.monotonic() + 1)
