"""The parent-worker channel: length-prefixed JSON headers with raw tensor payloads.

Nothing is unpickled: the parent parses JSON and rebuilds tensors from raw bytes, so a
candidate running in the worker cannot execute code in the parent through the channel.
"""

from __future__ import annotations

import ctypes
import json
import select
import socket
import struct
import time
from typing import Any

import torch

_LEN = struct.Struct("!II")
MAX_HEADER = 1 << 20
PINNED_MIN_BYTES = 1 << 20
"""Payloads from this size are received straight into pinned memory where asked: an output
bound for a GPU then crosses to it at the copy engine's full rate (pageable memory is staged
through a driver buffer at about a third of it)."""
Buffer = bytes | bytearray | memoryview
"""A payload: raw bytes, sent and received without extra copies."""


class ChannelClosed(Exception):
    """The other end closed the channel (e.g. the worker died)."""


def send(sock: socket.socket, header: dict[str, Any], payload: Buffer = b"") -> None:
    """Send one message (the payload is not copied)."""
    data = json.dumps(header).encode()
    payload = memoryview(payload).cast("B")
    sock.sendall(_LEN.pack(len(data), payload.nbytes) + data)
    if payload.nbytes:
        sock.sendall(payload)


def _recv_exact(
    sock: socket.socket, n: int, deadline: float | None, *, into: memoryview | None = None
) -> Buffer:
    """``n`` bytes, read straight into one buffer (``into``, or a new one)."""
    buf: Buffer = bytearray(n) if into is None else into
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([sock], [], [], wait)[0]:
                raise TimeoutError
        count = sock.recv_into(view[got:], min(n - got, 1 << 24))
        if not count:
            raise ChannelClosed
        got += count
    return buf


def recv(
    sock: socket.socket, deadline: float | None = None, *, pinned: bool = False
) -> tuple[dict[str, Any], Buffer]:
    """Receive one message; ``deadline`` is a ``time.monotonic()`` value or None.

    ``pinned``: receive a payload of :data:`PINNED_MIN_BYTES` or more into page-locked
    memory (a process with a GPU whose payloads go to it; the memory is torch's cached
    pinned blocks, so repeated sizes cost no new allocation).

    Raises:
        TimeoutError: Nothing complete arrived before the deadline.
        ChannelClosed: The peer closed the channel.

    """
    head_len, payload_len = _LEN.unpack(_recv_exact(sock, _LEN.size, deadline))
    if head_len > MAX_HEADER:
        raise ChannelClosed
    header = json.loads(bytes(_recv_exact(sock, head_len, deadline)))
    if not isinstance(header, dict):
        raise ChannelClosed
    if not payload_len:
        return header, b""
    into = None
    if pinned and payload_len >= PINNED_MIN_BYTES:
        try:
            into = torch.empty(payload_len, dtype=torch.uint8, pin_memory=True).numpy().data
        except RuntimeError:  # no page-locked memory that large: a pageable buffer instead
            into = None
    return header, _recv_exact(sock, payload_len, deadline, into=into)


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


def tensor_to_wire(t: torch.Tensor) -> tuple[dict[str, Any], Buffer]:
    """Describe and serialise a tensor (copied to the CPU; pinned memory for GPU tensors)."""
    metas, payload = pack_tensors([t])
    meta = {k: v for k, v in metas[0].items() if k != "nbytes"}
    return meta, payload


def pack_tensors(tensors: list[torch.Tensor]) -> tuple[list[dict[str, Any]], Buffer]:
    """Serialise several tensors into one payload; each meta records its byte count.

    Each tensor's bytes are copied once, into one host buffer (pinned when any tensor is on
    the GPU, so the device-to-host copies run at full speed).
    """
    metas: list[dict[str, Any]] = []
    flats: list[torch.Tensor | None] = []
    for t in tensors:
        name = str(t.dtype).removeprefix("torch.")
        meta = {"shape": list(t.shape), "dtype": name, "device": t.device.type}
        flat = (
            t.detach().contiguous().reshape(-1).view(torch.uint8) if name in WIRE_DTYPES else None
        )
        metas.append({**meta, "nbytes": 0 if flat is None else flat.numel()})
        flats.append(flat)
    total = sum(int(m["nbytes"]) for m in metas)
    if total == 0:
        return metas, b""
    pinned = any(f is not None and f.is_cuda for f in flats)
    host = torch.empty(total, dtype=torch.uint8, pin_memory=pinned)
    offset = 0
    for flat in flats:
        if flat is not None and flat.numel():
            host[offset : offset + flat.numel()].copy_(flat)
            offset += flat.numel()
    return metas, host.numpy().data


def unpack_tensors(metas: list[dict[str, Any]], payload: Buffer) -> list[torch.Tensor]:
    """Inverse of :func:`pack_tensors`; tensors sent from a GPU go back to the GPU."""
    out, offset = [], 0
    view = memoryview(payload).cast("B")
    for meta in metas:
        n = int(meta["nbytes"])
        t = tensor_from_wire(meta, view[offset : offset + n])
        out.append(t.to(meta["device"]) if meta["device"] == "cuda" else t)
        offset += n
    return out


def tensor_from_wire(meta: dict[str, Any], payload: Buffer) -> torch.Tensor:
    """Rebuild a tensor sent by :func:`tensor_to_wire` (sharing ``payload`` when aligned).

    Raises:
        KeyError: The dtype is not one that travels (e.g. complex); the caller rejects it.
    """
    dtype = WIRE_DTYPES[meta["dtype"]]
    view = memoryview(payload).cast("B")
    if not view.nbytes:
        return torch.empty(0, dtype=dtype).reshape(meta["shape"])
    size = torch.empty((), dtype=dtype).element_size()
    aligned = not view.readonly and _address(view) % size == 0
    raw = torch.frombuffer(view if aligned else bytearray(view), dtype=torch.uint8)
    return raw.view(dtype).reshape(meta["shape"])


def _address(view: memoryview) -> int:
    """The address of a writable buffer's first byte."""
    return ctypes.addressof(ctypes.c_char.from_buffer(view))
