"""The GPU trace check: what a candidate call really launched, seen through torch's profiler.

The worker profiles one candidate call (``collect``); the parent judges the summary
(``judge``): every GPU activity must have been launched by the calling thread during the
call, run on the caller's stream (so it finishes before the harness's end event), and every
kernel must be the candidate's own (its ``__global__`` functions, read from the object file)
or a torch fill or copy kernel behind an allowed allocation op. cuBLAS, cuDNN, flash, CUTLASS
or other aten kernels, side streams, background threads and deferred launches all fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from evals.harness.failures import Code, Failure, one_line
from evals.harness.static_checks import candidate_objects

CALL_RANGE = "kernelseek_candidate_call"
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
ALLOWED_TORCH_KERNELS = re.compile(r"FillFunctor|copy_kernel|CopyKernel", re.IGNORECASE)
"""Kernels of the allocation, fill and copy ops the contract allows."""


def collect(fn: Callable[[], object]) -> dict[str, Any]:
    """Profile one call of ``fn`` (already warmed up) and summarise its GPU activity.

    Returns:
        ``{"activities": [...], "caller_stream": int | None, "caller_tid": int}``; each
        activity has ``cat``, ``name``, ``stream``, ``launch_tid``, ``in_call`` (launched
        during the call) and ``marker`` (the harness's own stream marker).
    """
    marker = torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        marker.fill_(0.0)  # launched on the caller's stream: its kernel names that stream
        with record_function(CALL_RANGE):
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory(prefix="kernelseek-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    return summarise(events, threading.get_native_id())


def summarise(events: list[dict[str, Any]], caller_tid: int) -> dict[str, Any]:
    """Reduce chrome-trace ``events`` to the GPU activities and who launched them."""
    call = next(
        (e for e in events if e.get("name") == CALL_RANGE and e.get("cat") == "user_annotation"),
        None,
    )
    start = float(call["ts"]) if call else float("inf")
    end = start + float(call.get("dur", 0.0)) if call else float("-inf")
    launches = {_args(e).get("correlation"): e for e in events if e.get("cat") in LAUNCH_CATEGORIES}
    activities = []
    caller_stream = None
    for e in events:
        if e.get("cat") not in GPU_CATEGORIES:
            continue
        launch = launches.get(_args(e).get("correlation"))
        tid = int(launch["tid"]) if launch and str(launch.get("tid", "")).isdigit() else None
        t = float(launch["ts"]) if launch else None
        in_call = t is not None and start <= t <= end
        is_marker = t is not None and t < start and tid == caller_tid and e["cat"] == "kernel"
        if is_marker:
            caller_stream = _args(e).get("stream")
        activities.append(
            {
                "cat": e["cat"],
                "name": str(e.get("name", "")),
                "stream": _args(e).get("stream"),
                "launch_tid": tid,
                "in_call": in_call,
                "marker": is_marker,
            }
        )
    return {
        "activities": activities,
        "caller_stream": caller_stream,
        "caller_tid": caller_tid,
        "call_found": call is not None,
    }


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def judge(summary: dict[str, Any], own_kernels: frozenset[str]) -> tuple[Failure | None, str]:
    """The trace's verdict: a failure (or None) and a one-line finding for the verdict."""
    if not summary.get("call_found") or summary.get("caller_stream") is None:
        return None, "skipped: the profiler recorded no usable trace"
    stream, tid = summary["caller_stream"], summary["caller_tid"]
    kernels = 0
    for act in summary["activities"]:
        if act["marker"]:
            continue
        name = one_line(act["name"], 120)
        what = f"{act['cat']} {name}"
        if act["launch_tid"] != tid or not act["in_call"]:
            where = "another thread" if act["launch_tid"] != tid else "outside the call"
            reason = f"{what} was launched from {where} (background or deferred work)"
            return Failure(Code.TRACE_VIOLATION, reason), "failed"
        if act["stream"] != stream:
            reason = f"{what} ran on stream {act['stream']}, not the caller's stream {stream}"
            return Failure(Code.TRACE_VIOLATION, reason), "failed"
        if act["cat"] == "kernel":
            kernels += 1
            own = base_name(act["name"]) in own_kernels
            if not own and not ALLOWED_TORCH_KERNELS.search(act["name"]):
                reason = f"launched a kernel that is not the candidate's own: {name}"
                return Failure(Code.TRACE_VIOLATION, reason), "failed"
    if kernels == 0:
        reason = "the call launched no GPU kernel (work done elsewhere, or nothing computed)"
        return Failure(Code.TRACE_VIOLATION, reason), "failed"
    finding = f"passed: {kernels} kernel(s), all the candidate's own, on the caller's stream"
    return None, finding


def base_name(demangled: str) -> str:
    """``void ns::kernel<64, T>(args)`` -> ``kernel``.

    Namespaces are dropped: the profiler and the demangler may spell them differently.
    """
    return qualified_name(demangled).rsplit("::", 1)[-1]


def qualified_name(demangled: str) -> str:
    """``void ns::kernel<64, T>(args)`` -> ``ns::kernel``: no return type, arguments, template."""
    text = _strip_group(demangled.strip(), "(", ")")
    text = _strip_group(text, "<", ">")
    depth, cut = 0, 0
    for i, ch in enumerate(text):  # the return type ends at the last space outside brackets
        depth += ch in "(<"
        depth -= ch in ")>"
        if ch == " " and depth == 0:
            cut = i + 1
    return text[cut:]


def _strip_group(text: str, open_: str, close: str) -> str:
    """Drop a trailing bracketed group (``(...)`` or ``<...>``), nesting respected."""
    if not text.endswith(close):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += text[i] == close
        depth -= text[i] == open_
        if depth == 0:
            return text[:i].rstrip()
    return text


def own_kernels(library: Path) -> frozenset[str]:
    """Base names of the ``__global__`` functions compiled into the candidate's objects.

    nvcc emits a host stub ``__device_stub__<mangled kernel name>`` for each kernel (itself a
    C++ function, so listed demangled); the kernel names are demangled with ``c++filt``.
    """
    mangled = []
    for obj in candidate_objects(library):
        out = subprocess.run(
            ["nm", "-C", "--defined-only", str(obj)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        for name in _STUB.findall(out):
            mangled.append("_" + name if name.startswith("Z") else name)
    if not mangled:
        return frozenset()
    demangled = subprocess.run(
        ["c++filt"], input="\n".join(mangled), capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    return frozenset(base_name(d) for d in demangled)


_STUB = re.compile(r"__device_stub__(\w+)")
