"""The GPU trace check: what candidate calls really launched, seen through torch's profiler.

The worker records one profiler session, after all timing, over a few calls per scenario made
exactly as the timing loop makes them (the timing input sets, a fresh q, the L2 flush, the
spin and the events: ``Recorder.timed_call``), so a traced call cannot be told apart from a
timed one; the parent judges the summary per call (``judge``): every GPU
activity must have been launched by the calling thread during its call, run on the caller's
stream (so it finishes before the harness's end event), no copy may move data between host
and device, and every kernel must be the candidate's own (its ``__global__`` functions, read
from the object file) or a torch fill or copy kernel behind an allowed allocation op.
cuBLAS, cuDNN, flash, CUTLASS or other aten kernels, side streams, background threads and
deferred launches all fail.

One session for the whole run, not one per scenario: CUPTI's set-up and teardown cost about a
second per session, and back-to-back sessions can drop kernel records at their head
(pytorch/pytorch#192021).
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from evals.harness.failures import Code, Failure, one_line
from evals.harness.static.static_checks import candidate_objects

CALL_RANGE = "kernelseek_candidate_call"
MARKER_RANGE = "kernelseek_stream_marker"
HARNESS_RANGE = "kernelseek_harness"
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
ALLOWED_TORCH_KERNELS = re.compile(r"FillFunctor|copy_kernel|CopyKernel", re.IGNORECASE)
"""Kernels of the allocation, fill and copy ops the contract allows."""
HOST_COPY = re.compile(r"\b(HtoD|DtoH|HtoH)\b")
"""Copies between host and device memory (profiler names ``Memcpy HtoD (Pinned -> Device)``):
never inside a call. Device time hides the host's work behind a spin, so data computed on
the host and copied in (or copied out to be computed there) would be work the timer misses."""
Verdicts = list[tuple[Failure | None, str]]


class Recorder:
    """One profiler session over numbered candidate calls, with the harness's work marked.

    Use as a context manager; inside, run the harness's own work (making inputs) under
    :meth:`harness` and each candidate call through :meth:`timed_call`; after it,
    :meth:`summary`.
    """

    def __init__(self) -> None:
        self._marker = torch.empty(1, device="cuda")
        self._prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Recorder:
        torch.cuda.synchronize()
        self._stack.enter_context(self._prof)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(Exception):  # after a CUDA error this raises too
            torch.cuda.synchronize()
        self._stack.__exit__(exc_type, exc, tb)

    @contextlib.contextmanager
    def harness(self) -> Iterator[None]:
        """Mark the harness's own GPU work (inputs), which may launch any torch kernel."""
        with record_function(HARNESS_RANGE):
            yield

    def timed_call(
        self, index: int, fn: Callable[[], object], time_call: Callable[..., Any], spin_us: float
    ) -> None:
        """Candidate call ``index`` exactly as the timing loop makes it.

        The stream marker first, then ``time_call`` (the timer's flush, spin and events, all
        the harness's own work) around the call, so a traced call looks like a timed one.
        """
        with record_function(f"{MARKER_RANGE}#{index}"):
            self._marker.fill_(float(index))  # its kernel names the caller's stream

        def marked() -> object:
            with record_function(f"{CALL_RANGE}#{index}"):
                return fn()

        with self.harness():
            time_call(marked, spin_us=spin_us)

    def summary(self) -> dict[str, Any]:
        """The session's GPU activities and who launched them (see :func:`summarise`)."""
        with tempfile.TemporaryDirectory(prefix="kernelseek-trace-") as tmp:
            path = Path(tmp) / "trace.json"
            self._prof.export_chrome_trace(str(path))
            events = json.loads(path.read_text())["traceEvents"]
        return summarise(events, threading.get_native_id())


def summarise(events: list[dict[str, Any]], caller_tid: int) -> dict[str, Any]:
    """Reduce chrome-trace ``events`` to the GPU activities, their launchers and call ranges.

    Returns:
        ``{"caller_tid", "calls": {index: [start_us, end_us]}, "markers": {index: stream},
        "activities": [...]}`` (indices as strings, JSON-style); each activity has ``cat``,
        ``name``, ``stream``, ``dur`` (its device time, us), ``launch_tid``, ``call`` (the
        index of the call it was launched in, or None), ``after`` (the latest call begun
        before its launch, or None) and ``harness`` (launched inside the harness's own work).
    """
    ranges: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") == "user_annotation" and "ts" in e:
            start = float(e["ts"])
            ranges.setdefault(str(e.get("name")), []).append(
                (start, start + float(e.get("dur", 0)))
            )
    calls = _Spans(_indexed(ranges, CALL_RANGE))
    marks = _Spans(_indexed(ranges, MARKER_RANGE))
    harness = _Spans({str(i): span for i, span in enumerate(ranges.get(HARNESS_RANGE, []))})
    launches = {_args(e).get("correlation"): e for e in events if e.get("cat") in LAUNCH_CATEGORIES}
    markers: dict[str, Any] = {}
    activities = []
    for e in events:
        if e.get("cat") not in GPU_CATEGORIES:
            continue
        launch = launches.get(_args(e).get("correlation"))
        tid = int(launch["tid"]) if launch and str(launch.get("tid", "")).isdigit() else None
        t = float(launch["ts"]) if launch else None
        stream = _args(e).get("stream")
        mark = marks.within(t)
        if mark is not None and tid == caller_tid:
            markers[mark] = stream
            continue
        activities.append(
            {
                "cat": e["cat"],
                "name": str(e.get("name", "")),
                "stream": stream,
                "dur": float(e.get("dur", 0.0)),
                "launch_tid": tid,
                "call": calls.within(t),
                "after": calls.latest(t),
                "harness": harness.within(t) is not None,
            }
        )
    return {
        "caller_tid": caller_tid,
        "calls": {i: list(span) for i, span in calls.spans.items()},
        "markers": markers,
        "activities": activities,
    }


def _indexed(
    ranges: dict[str, list[tuple[float, float]]], prefix: str
) -> dict[str, tuple[float, float]]:
    """``prefix#3`` ranges by index ("3"); the first of each name."""
    return {
        name.split("#", 1)[1]: spans[0]
        for name, spans in ranges.items()
        if name.startswith(prefix + "#")
    }


class _Spans:
    """Named, non-overlapping time spans, searched by time."""

    def __init__(self, spans: dict[str, tuple[float, float]]) -> None:
        self.spans = spans
        self._order = sorted(spans, key=lambda k: spans[k][0])
        self._starts = [spans[k][0] for k in self._order]

    def latest(self, t: float | None) -> str | None:
        """The span begun last at or before ``t``."""
        if t is None:
            return None
        i = bisect.bisect_right(self._starts, t)
        return self._order[i - 1] if i else None

    def within(self, t: float | None) -> str | None:
        """The span containing ``t``."""
        key = self.latest(t)
        return key if key is not None and t is not None and t <= self.spans[key][1] else None


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def judge(summary: dict[str, Any], own_kernels: frozenset[str], count: int) -> Verdicts:
    """Each of calls ``0..count-1``'s verdict: a failure (or None) and a one-line finding.

    Work launched outside any call (by another thread, or by the candidate's kernels after
    its call returned) is blamed on the latest call begun before it, or on call 0.
    """
    calls, markers = summary.get("calls", {}), summary.get("markers", {})
    kernels = dict.fromkeys(map(str, range(count)), 0)
    bad: dict[str, Failure] = {}
    orphans = 0  # GPU records whose launch record the profiler lost: blamed on no one
    for act in summary.get("activities", []):
        if act["launch_tid"] is None:
            orphans += 1
            continue
        index = act["call"] if act["call"] is not None else act["after"] or "0"
        if index in bad or index not in kernels:
            continue
        failure = _violation(act, summary["caller_tid"], markers.get(index), own_kernels)
        if failure is not None:
            bad[index] = failure
        elif act["call"] is not None and act["cat"] == "kernel":
            kernels[index] += 1
    verdicts: Verdicts = []
    for index, n in kernels.items():
        if index not in calls or markers.get(index) is None:
            verdicts.append((None, "skipped: the profiler recorded no usable trace of this call"))
        elif index in bad:
            verdicts.append((bad[index], "failed"))
        elif n == 0 and orphans:
            verdicts.append((None, f"skipped: {orphans} GPU record(s) lost their launch record"))
        elif n == 0:
            reason = "the call launched no GPU kernel (work done elsewhere, or nothing computed)"
            verdicts.append((Failure(Code.TRACE_VIOLATION, reason), "failed"))
        else:
            finding = f"passed: {n} kernel(s), all the candidate's own, on the caller's stream"
            verdicts.append((None, finding))
    return verdicts


def _violation(
    act: dict[str, Any], caller_tid: int, stream: object, own_kernels: frozenset[str]
) -> Failure | None:
    """Why one GPU activity breaks the rules, or None."""
    name = one_line(act["name"], 120)
    what = f"{act['cat']} {name}"
    own = normalise(act["name"]) in own_kernels
    if act["launch_tid"] != caller_tid:
        reason = f"{what} was launched from another thread (background or deferred work)"
    elif act["call"] is None and (own or not act["harness"]):
        reason = f"{what} was launched from outside the call (deferred work)"
    elif act["call"] is None:
        return None  # the harness's own work between calls
    elif act["cat"] == "gpu_memcpy" and HOST_COPY.search(act["name"]):
        reason = f"{what}: a copy between host and device during the call"
    elif act["stream"] != stream:
        reason = f"{what} ran on stream {act['stream']}, not the caller's stream {stream}"
    elif act["cat"] == "kernel" and not own and not ALLOWED_TORCH_KERNELS.search(act["name"]):
        reason = f"launched a kernel that is not the candidate's own: {name}"
    else:
        return None
    return Failure(Code.TRACE_VIOLATION, reason)


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
    """Full names of the ``__global__`` functions compiled into the candidate's own objects.

    Exact identities, not base names: a candidate kernel that shares a base name with a
    library's (FA3's ``device_kernel``, FA2's ``flash_fwd_kernel``) must not make that
    library's kernels count as its own. The mangled names come from the device code's own
    symbol table (``cuobjdump -symbols``: entry functions) where cuobjdump is installed, as it
    is beside nvcc; else from nvcc's host stubs (``__device_stub__<mangled name>``). They are
    demangled with ``__cxa_demangle``, the demangler torch's profiler uses, and compared with
    whitespace removed (:func:`normalise`).
    """
    objects = candidate_objects(library)
    tool = find_cuobjdump()
    mangled = _entry_symbols(objects, tool) if tool else _stub_symbols(objects)
    return frozenset(normalise(demangle(m)) for m in mangled)


def normalise(name: str) -> str:
    """A kernel's full name with all whitespace removed (``> >`` and ``>>`` compare equal)."""
    return "".join(name.split())


def find_cuobjdump() -> str | None:
    """Path of cuobjdump (PATH, ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``), or None."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "cuobjdump").is_file():
            return str(Path(home) / "bin" / "cuobjdump")
    return None


def _entry_symbols(objects: list[Path], tool: str) -> list[str]:
    """Mangled names of the kernel entry points in the objects' embedded device code."""
    names = []
    for obj in objects:
        out = subprocess.run(
            [tool, "-symbols", str(obj)], capture_output=True, text=True, timeout=60, check=False
        ).stdout
        names += [
            ln.split()[-1] for ln in out.splitlines() if "STT_FUNC" in ln and "STO_ENTRY" in ln
        ]
    return names


def _stub_symbols(objects: list[Path]) -> list[str]:
    """Mangled kernel names from nvcc's host stubs (``__device_stub__Z...``).

    Read demangled (``nm -C``): a stub in an anonymous namespace is itself mangled around the
    kernel's name, which the demangled form leaves whole.
    """
    names = []
    for obj in objects:
        out = subprocess.run(
            ["nm", "-C", "--defined-only", str(obj)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        names += ["_" + n if n.startswith("Z") else n for n in _STUB.findall(out)]
    return names


def demangle(mangled: str) -> str:
    """``__cxa_demangle`` of ``mangled`` (as torch's profiler prints kernel names), or itself."""
    status = ctypes.c_int()
    ptr = _CXA_DEMANGLE(mangled.encode(), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return mangled
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        _FREE(ctypes.c_void_p(ptr))


def _load_demangler() -> tuple[Any, Any]:
    libstdcxx = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
    fn = libstdcxx.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_int),
    ]
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    return fn, free


_CXA_DEMANGLE, _FREE = _load_demangler()
_STUB = re.compile(r"__device_stub__(\w+)")
