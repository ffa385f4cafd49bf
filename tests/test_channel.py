import socket
import threading
import time

import pytest
import torch

from evals.harness.worker_link import channel


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


def test_several_tensors_of_mixed_sizes_travel_in_one_payload_and_come_back_equal():
    # a bf16 tensor of odd length puts the next (8-byte) tensor at a misaligned offset
    tensors = [torch.randn(3).bfloat16(), torch.randn(5, dtype=torch.float64),
               torch.empty(0), torch.randint(0, 9, (4,), dtype=torch.int8),
               torch.zeros(2, dtype=torch.complex64)]
    metas, payload = channel.pack_tensors(tensors)
    assert [m["nbytes"] for m in metas] == [6, 40, 0, 4, 0]  # complex does not travel
    a, b = socket.socketpair()
    channel.send(a, {"tensors": metas}, payload)
    header, received = channel.recv(b, time.monotonic() + 5)
    back = channel.unpack_tensors(header["tensors"][:4], received)
    for x, y in zip(back, tensors, strict=False):
        assert x.dtype == y.dtype and torch.equal(x, y)


@pytest.mark.parametrize("pinned", [False, True])
def test_a_large_payload_arrives_whole_through_the_socket(pinned):
    # pinned: into page-locked memory where there is a GPU, else (here) a pageable buffer
    t = torch.arange(3 << 20, dtype=torch.int32)  # 12 MiB: many socket reads
    metas, payload = channel.pack_tensors([t])
    a, b = socket.socketpair()
    sender = threading.Thread(target=channel.send, args=(a, {"m": metas}, payload))
    sender.start()
    header, received = channel.recv(b, time.monotonic() + 30, pinned=pinned)
    sender.join()
    (back,) = channel.unpack_tensors(header["m"], received)
    assert torch.equal(back, t)
