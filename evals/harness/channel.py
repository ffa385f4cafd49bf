"""The parent-worker channel: length-prefixed JSON headers with raw tensor payloads.

Nothing is unpickled: the parent parses JSON and rebuilds tensors from raw bytes, so a
candidate running in the worker cannot execute code in the parent through the channel.
"""

from __future__ import annotations

import json
import time
import select
import socket
import struct
from typing import Any

import torch

from evals.harness.attention import DTYPES

_LEN = struct.Struct("!II")
MAX_HEADER = 1 << 20


class ChannelClosed(Exception):
    """The other end closed the channel (e.g. the worker died)."""


def send(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    """Send one message."""
    data = json.dumps(header).encode()
    sock.sendall(_LEN.pack(len(data), len(payload)) + data + payload)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([sock], [], [], wait)[0]:
                raise TimeoutError
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, deadline: float | None = None) -> tuple[dict[str, Any], bytes]:
    """Receive one message; ``deadline`` is a ``time.monotonic()`` value or None.

    Raises:
        TimeoutError: Nothing complete arrived before the deadline.
        ChannelClosed: The peer closed the channel.
    """
    head_len, payload_len = _LEN.unpack(_recv_exact(sock, _LEN.size, deadline))
    if head_len > MAX_HEADER:
        raise ChannelClosed
    header = json.loads(_recv_exact(sock, head_len, deadline))
    if not isinstance(header, dict):
        raise ChannelClosed
    payload = _recv_exact(sock, payload_len, deadline) if payload_len else b""
    return header, payload


_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def tensor_to_wire(t: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """Describe and serialise a tensor (copied to the CPU)."""
    meta = {
        "shape": list(t.shape),
        "dtype": _DTYPE_NAMES.get(t.dtype, str(t.dtype)),
        "device": t.device.type,
    }
    if t.dtype not in _DTYPE_NAMES:
        return meta, b""
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return meta, flat.view(torch.uint8).numpy().tobytes()


def tensor_from_wire(meta: dict[str, Any], payload: bytes) -> torch.Tensor:
    """Rebuild a tensor sent by :func:`tensor_to_wire`."""
    dtype = DTYPES[meta["dtype"]]
    raw = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else torch.empty(0)
    return raw.view(dtype).reshape(meta["shape"])
