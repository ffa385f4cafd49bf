"""One GPU per running sample on a multi-GPU host: a host-wide pool of GPU leases.

Inspect runs several samples (epochs) at once. In the local sandbox every sample's harness used
GPU 0 (torch's pick), so on a host with several GPUs all samples queued on GPU 0's device lock
(:mod:`evals.harness.measurement.device_lock`) while the others idled. Now each harness run leases a
free GPU, named to it in ``CUDA_VISIBLE_DEVICES`` (:mod:`evals.bench.scoring.harness_exec`),
and gives it back when it ends. A lease is an exclusive ``flock`` on the GPU's file in
``$KERNELSEEK_GPU_POOL_DIR`` (default ``<tmp>/kernelseek-gpu-pool``): it holds across processes on
the host and dies with its holder. The pool: ``$KERNELSEEK_GPUS`` (comma-separated nvidia-smi
indices or UUIDs), else all of nvidia-smi's GPUs; empty (nothing changes) without nvidia-smi, a GPU,
or when ``CUDA_VISIBLE_DEVICES`` already pins the devices.

A GPU is shared only when every GPU of the pool already has a run: the next lease goes to a
least-leased GPU, up to ``$KERNELSEEK_GPU_SHARE`` runs per GPU (default
:data:`DEFAULT_SHARE`), and waits beyond that. A lease spans the whole harness run, build
included, so sharing is what lets one run build (on the CPU) while another measures; the
harness's device lock still admits one measurement at a time per GPU.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

__all__ = [
    "GPUS_ENV",
    "POOL_DIR_ENV",
    "SHARE_ENV",
    "Gpu",
    "PoolBusyError",
    "gpu_lease",
    "gpu_lease_async",
    "pool_share",
]

GPUS_ENV = "KERNELSEEK_GPUS"
POOL_DIR_ENV = "KERNELSEEK_GPU_POOL_DIR"
SHARE_ENV = "KERNELSEEK_GPU_SHARE"
DEFAULT_SHARE = 8  # harness runs per GPU at most; beyond, a run waits for a lease
POLL_S = 0.2  # seconds between attempts while every GPU is leased
QUERY = ("nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader")
Notify = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """One GPU of the host.

    Attributes:
        index: nvidia-smi's index (PCI bus order), or None when only the UUID is known.
        uuid: The GPU's UUID (``GPU-...``), or None when only the index is known.
    """

    index: int | None
    uuid: str | None

    @property
    def key(self) -> str:
        """The lease file's stem: the UUID when known, so every process names a GPU alike."""
        key = f"gpu-{self.uuid}" if self.uuid else f"gpu-index-{self.index}"
        return key.replace("/", "_")  # old-style MIG UUIDs hold slashes

    def env(self) -> dict[str, str]:
        """The environment under which CUDA (and torch) sees this GPU only, as its device 0.

        By UUID when known: unambiguous in every process, whatever its device order (the
        harness's worker keeps ``CUDA_VISIBLE_DEVICES``: :mod:`evals.harness.sandbox.hygiene`).
        """
        if self.uuid:
            return {"CUDA_VISIBLE_DEVICES": self.uuid}
        # PCI_BUS_ID: an index means nvidia-smi's GPU, not CUDA's default fastest-first order
        return {"CUDA_VISIBLE_DEVICES": str(self.index), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def __str__(self) -> str:
        return f"GPU {self.index} ({self.uuid})" if self.index is not None else f"GPU {self.uuid}"


class PoolBusyError(TimeoutError):
    """Every GPU of the pool stayed leased for the whole wait."""


def pool_dir() -> Path:
    """``$KERNELSEEK_GPU_POOL_DIR`` or ``<tmp>/kernelseek-gpu-pool``."""
    found = os.environ.get(POOL_DIR_ENV)
    return Path(found) if found else Path(tempfile.gettempdir()) / "kernelseek-gpu-pool"


def _host_gpus() -> list[Gpu]:
    """Every GPU nvidia-smi lists; empty without nvidia-smi, a driver or a GPU."""
    try:
        done = subprocess.run(QUERY, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    rows = (tuple(p.strip() for p in line.split(",")) for line in done.stdout.splitlines())
    return [Gpu(index=int(r[0]), uuid=r[1]) for r in rows if len(r) == 2 and r[0].isdigit()]


def pool_gpus() -> tuple[Gpu, ...]:
    """The pool's GPUs, in order of preference (see the module's docstring)."""
    listed = [e.strip() for e in os.environ.get(GPUS_ENV, "").split(",") if e.strip()]
    if not listed:
        # a CUDA_VISIBLE_DEVICES of the user's (or the scheduler's) stands: no pool
        return () if "CUDA_VISIBLE_DEVICES" in os.environ else tuple(_host_gpus())
    host = _host_gpus()
    gpus = []
    for entry in listed:
        known = next((g for g in host if entry in (str(g.index), g.uuid)), None)
        as_index = Gpu(index=int(entry), uuid=None) if entry.isdigit() else None
        gpus.append(known or as_index or Gpu(index=None, uuid=entry))
    return tuple(dict.fromkeys(gpus))


def pool_share() -> int:
    """Harness runs per GPU at most: ``$KERNELSEEK_GPU_SHARE`` (a positive integer) or the default.

    Raises:
        ValueError: The variable is set to something else (one line, naming it).
    """
    found = os.environ.get(SHARE_ENV, "").strip()
    if not found:
        return DEFAULT_SHARE
    if not found.isdigit() or int(found) < 1:
        raise ValueError(f"{SHARE_ENV}={found!r}: expected a positive integer (runs per GPU)")
    return int(found)


def _slots(gpus: tuple[Gpu, ...], share: int) -> Iterator[tuple[str, Gpu]]:
    """Lease files in order of preference: every GPU's first slot, then every second one, ..."""
    for slot in range(share):
        for gpu in gpus:
            yield (f"{gpu.key}.lease" if slot == 0 else f"{gpu.key}.{slot}.lease"), gpu


def _take(folder: Path, gpus: tuple[Gpu, ...], what: str) -> tuple[int, Gpu] | None:
    """Lease a least-leased GPU: (the locked lease file's descriptor, the GPU), or None."""
    for name, gpu in _slots(gpus, pool_share()):
        fd = os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "what": what}).encode(), 0)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        return fd, gpu
    return None


def _give_back(fd: int) -> None:
    """End a lease: clear its holder and close the only descriptor, which drops the flock."""
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _attempts(
    gpus: tuple[Gpu, ...], *, what: str, timeout_s: float | None, notify: Notify | None
) -> Iterator[tuple[int, Gpu] | None]:
    """Lease attempts: None while every GPU is leased (sleep, then ask again), then the lease."""
    folder = pool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    start, said, waiting = time.monotonic(), notify or (lambda _: None), False
    while (taken := _take(folder, gpus, what)) is None:
        waited = time.monotonic() - start
        if timeout_s is not None and waited > timeout_s:
            raise PoolBusyError(f"no GPU of {len(gpus)} came free within {waited:.0f} s")
        if not waiting:
            said(f"waiting for a free GPU: all {len(gpus)} of the pool are fully leased")
            waiting = True
        yield None
    if waiting:
        said(f"{taken[1]} leased after waiting {time.monotonic() - start:.1f} s")
    yield taken


@contextlib.contextmanager
def gpu_lease(
    *, what: str, timeout_s: float | None = None, notify: Notify | None = None
) -> Iterator[Gpu | None]:
    """Hold one GPU of the pool for the block (None: the pool is empty).

    Args:
        what: Who holds it, in a few words (written into the lease file while held).
        timeout_s: Seconds to wait at most for a free GPU (None: no limit).
        notify: Told in one line when the lease has to wait, and when it ends up leased.

    Raises:
        PoolBusyError: Every GPU stayed fully leased for ``timeout_s``.
        ValueError: ``$KERNELSEEK_GPU_SHARE`` is not a positive integer.
    """
    gpus = pool_gpus()
    if not gpus:
        yield None
        return
    attempts = _attempts(gpus, what=what, timeout_s=timeout_s, notify=notify)
    while (taken := next(attempts)) is None:
        time.sleep(POLL_S)
    try:
        yield taken[1]
    finally:
        _give_back(taken[0])


@contextlib.asynccontextmanager
async def gpu_lease_async(
    *, what: str, timeout_s: float | None = None, notify: Notify | None = None
) -> AsyncIterator[Gpu | None]:
    """:func:`gpu_lease` for async callers: waits without blocking the event loop."""
    gpus = await anyio.to_thread.run_sync(pool_gpus)  # nvidia-smi takes a moment
    if not gpus:
        yield None
        return
    attempts = _attempts(gpus, what=what, timeout_s=timeout_s, notify=notify)
    while (taken := next(attempts)) is None:
        await anyio.sleep(POLL_S)
    try:
        yield taken[1]
    finally:
        _give_back(taken[0])
