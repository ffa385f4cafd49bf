"""A gate on a CUDA stream that another process opens: device work that waits for its secrets.

The parent's clock on a GPU candidate's back-to-back calls measured the host's issue work
with the device's: a candidate whose host issue overlaps its kernels could pad the one to
hide a forged report of the other (THREATS.md, Known limits). A gated batch keeps host issue
out of the parent's interval. The worker queues the whole batch behind a gate, then says it
is armed; the parent writes the batch's secrets (each call's fresh-query offsets) into the
gate's page and then its token, and starts its clock; the device, polling the token word,
copies the secrets in and runs the batch. Nothing queued behind the gate can be computed
before the parent opens it, whatever the candidate's process does: the secrets are not in
that process until then.

The gate is one shared page (a ``memfd``: shmem, so the driver can pin it), made by the
parent (:class:`Gate`) and mapped by the worker from the descriptor it inherits
(:class:`DeviceGate`): word 0 is the token, the payload starts at :data:`PAYLOAD_OFFSET`. The
worker registers the page with the driver (page-locked, mapped for the device), queues
``cuStreamWaitValue32`` on the token and ``cuMemcpyHtoDAsync`` of the payload, both through
``ctypes`` on the driver the worker's CUDA context already loaded. The wall-clock check's
gated batches use it (:mod:`evals.harness.clock_checks.gated_batch`).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import struct
import time
from typing import Any

import torch

__all__ = ["PAGE_BYTES", "PAYLOAD_OFFSET", "DeviceGate", "Gate"]

PAGE_BYTES = 4096
PAYLOAD_OFFSET = 64
"""Bytes before the payload: the token word and room for the worker's own words."""
_WAIT_EQ = 0x1  # CU_STREAM_WAIT_VALUE_EQ
_REGISTER_DEVICEMAP = 0x02  # CU_MEMHOSTREGISTER_DEVICEMAP


class Gate:
    """The parent's side: the page, its descriptor for the worker, and the opening.

    Args:
        size: Bytes of the page (a multiple of 4096, at least one page).
    """

    def __init__(self, size: int = PAGE_BYTES) -> None:
        if size < PAGE_BYTES or size % PAGE_BYTES:
            raise ValueError(f"a gate is whole pages of {PAGE_BYTES} bytes, not {size}")
        self.fd = os.memfd_create("kernelseek-gate", os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        # sealed at its size before any other process has it: a worker that shrank the file
        # would make the parent's next write to the page a SIGBUS in the parent
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)  # fmt: skip
        self.size = size
        self.page = mmap.mmap(self.fd, size)

    @property
    def capacity(self) -> int:
        """Payload bytes the gate holds."""
        return self.size - PAYLOAD_OFFSET

    def open(self, token: int, payload: bytes) -> float:
        """Write ``payload``, then the ``token`` (nonzero, 32 bits): the batch starts.

        Returns the parent's clock (``time.perf_counter``, seconds) just before the token's
        write, the start of the batch's interval.
        """
        if not 0 < token < 2**32:
            raise ValueError("a gate's token is a nonzero 32-bit word")
        if len(payload) > self.capacity:
            raise ValueError(f"{len(payload)} bytes of payload; the gate holds {self.capacity}")
        self.page[PAYLOAD_OFFSET : PAYLOAD_OFFSET + len(payload)] = payload
        start = time.perf_counter()
        # x86 stores become visible in program order: the device sees the payload by the
        # time it sees the token
        struct.pack_into("<I", self.page, 0, token)
        return start

    def shut(self) -> None:
        """Clear the token and the payload, for the next batch."""
        self.page[:] = bytes(self.size)

    def close(self) -> None:
        """Unmap the page and close its descriptor."""
        self.page.close()
        os.close(self.fd)


class _Driver:
    """The three driver calls a device gate needs, from the loaded ``libcuda.so.1``."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        self.register = _fn(lib, "cuMemHostRegister_v2", ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_uint)  # fmt: skip
        self.unregister = _fn(lib, "cuMemHostUnregister", ctypes.c_void_p)
        self.device_pointer = _fn(lib, "cuMemHostGetDevicePointer_v2",
                                  ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p,
                                  ctypes.c_uint)  # fmt: skip
        self.wait = _fn(lib, "cuStreamWaitValue32_v2", ctypes.c_void_p, ctypes.c_uint64,
                        ctypes.c_uint32, ctypes.c_uint)  # fmt: skip
        self.copy_in = _fn(lib, "cuMemcpyHtoDAsync_v2", ctypes.c_uint64, ctypes.c_void_p,
                           ctypes.c_size_t, ctypes.c_void_p)  # fmt: skip
        self.error_name = lib.cuGetErrorName

    def check(self, result: int, what: str) -> None:
        """Raise with the driver's name for ``result`` unless it is CUDA_SUCCESS."""
        if result != 0:
            name = ctypes.c_char_p()
            self.error_name(result, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: {(name.value or b'?').decode()} ({result})")


def _fn(lib: ctypes.CDLL, name: str, *args: Any) -> Any:
    function = getattr(lib, name)
    function.argtypes = list(args)
    function.restype = ctypes.c_int
    return function


class DeviceGate:
    """The worker's side: queue a wait for the token and the payload's copy on a stream.

    Args:
        fd: The gate's descriptor (:attr:`Gate.fd`, inherited).
        size: The gate's size in bytes.
    """

    def __init__(self, fd: int, size: int = PAGE_BYTES) -> None:
        self.driver = _Driver()
        self.page = mmap.mmap(fd, size)
        self.size = size
        self._anchor = ctypes.c_char.from_buffer(self.page)  # released before the unmap
        self.host = ctypes.addressof(self._anchor)
        torch.cuda.synchronize()  # makes torch's context current for the driver calls
        self.driver.check(self.driver.register(self.host, size, _REGISTER_DEVICEMAP),
                          "cuMemHostRegister")  # fmt: skip
        device = ctypes.c_uint64()
        self.driver.check(self.driver.device_pointer(ctypes.byref(device), self.host, 0),
                          "cuMemHostGetDevicePointer")  # fmt: skip
        self.device = device.value

    def queue(self, token: int, payload: torch.Tensor) -> None:
        """On the current stream: wait until the token word is ``token``, then fill ``payload``.

        ``payload`` is a contiguous CUDA tensor; it receives the gate's first
        ``payload.nbytes`` payload bytes once the parent has opened the gate.

        Every kernel queued behind the gate must have run once in this process before: CUDA
        loads a kernel's module lazily at its first launch, and that load waits for the
        device, which waits for the gate, which the parent opens only once the worker says it
        is armed (seen on an H100: the first ``add_`` behind a closed gate never returned).
        """
        if payload.nbytes > self.size - PAYLOAD_OFFSET or not payload.is_contiguous():
            raise ValueError("the payload must be contiguous and fit the gate")
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.driver.check(self.driver.wait(stream, self.device, token, _WAIT_EQ),
                          "cuStreamWaitValue32")  # fmt: skip
        source = ctypes.c_void_p(self.host + PAYLOAD_OFFSET)
        self.driver.check(self.driver.copy_in(payload.data_ptr(), source, payload.nbytes,
                                              stream), "cuMemcpyHtoDAsync")  # fmt: skip

    def is_open(self, token: int) -> bool:
        """Whether the parent has written ``token``, as the host sees the page now."""
        return bool(struct.unpack_from("<I", self.page, 0)[0] == token)

    def close(self) -> None:
        """Unregister and unmap the page (after the device is done with it)."""
        self.driver.check(self.driver.unregister(self.host), "cuMemHostUnregister")
        del self._anchor
        self.page.close()
