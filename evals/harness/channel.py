"""The parent-worker channel: length-prefixed JSON headers with raw tensor payloads.

Nothing is unpickled: the parent parses JSON and rebuilds tensors from raw bytes, so a
candidate running in the worker cannot execute code in the parent through the channel.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time
from typing import Any

import torch

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


WIRE_DTYPES: dict[str, torch.dtype] = {
    str(dt).removeprefix("torch."): dt
    for dt in (
        torch.float64,
        torch.float32,
        torch.bfloat16,
        torch.float16,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}


def tensor_to_wire(t: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """Describe and serialise a tensor (copied to the CPU)."""
    name = str(t.dtype).removeprefix("torch.")
    meta = {"shape": list(t.shape), "dtype": name, "device": t.device.type}
    if name not in WIRE_DTYPES:
        return meta, b""
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return meta, flat.view(torch.uint8).numpy().tobytes()


def pack_tensors(tensors: list[torch.Tensor]) -> tuple[list[dict[str, Any]], bytes]:
    """Serialise several tensors into one payload; each meta records its byte count."""
    metas, chunks = [], []
    for t in tensors:
        meta, data = tensor_to_wire(t)
        metas.append({**meta, "nbytes": len(data)})
        chunks.append(data)
    return metas, b"".join(chunks)


def unpack_tensors(metas: list[dict[str, Any]], payload: bytes) -> list[torch.Tensor]:
    """Inverse of :func:`pack_tensors`; tensors sent from a GPU go back to the GPU."""
    out, offset = [], 0
    for meta in metas:
        n = int(meta["nbytes"])
        t = tensor_from_wire(meta, payload[offset : offset + n])
        out.append(t.to(meta["device"]) if meta["device"] == "cuda" else t)
        offset += n
    return out


def tensor_from_wire(meta: dict[str, Any], payload: bytes) -> torch.Tensor:
    """Rebuild a tensor sent by :func:`tensor_to_wire`.

    Raises:
        KeyError: The dtype is not one that travels (e.g. complex); the caller rejects it.
    """
    dtype = WIRE_DTYPES[meta["dtype"]]
    raw = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else torch.empty(0)
    return raw.view(dtype).reshape(meta["shape"])
