"""The worker process's requests: it runs the candidate library (or an upstream) on them.

Once :mod:`evals.harness.worker.startup` has confined the process and loaded the library,
:func:`serve` answers the parent: the :class:`Worker` generates inputs from the seeds the
parent sends, runs the candidate (and, for timing, the upstreams) and returns outputs and
timings. The parent computes every verdict.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import socket
import time
from collections.abc import Callable
from typing import Any

import torch

from evals.harness.clock_checks.digest import digests
from evals.harness.failures import Code, Failure, one_line
from evals.harness.measurement.gpu import release_cached_memory
from evals.harness.measurement.stream_gate import DeviceGate
from evals.harness.measurement.timing import Timer, TimingSettings, call_seed, measure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs, Target
from evals.harness.targets.guards import (
    KEEP_INPUTS_BYTES,
    KEEP_TIMED_BYTES,
    InputGuard,
    aliasing,
    input_bytes,
    too_large_to_copy_twice,
)
from evals.harness.tracing.trace import Recorder
from evals.harness.worker.errors import (
    CandidateError,
    candidate_error,
    poisoned_allocations,
)
from evals.harness.worker.timed_outputs import TimedOutputs
from evals.harness.worker.wall import WallBatches
from evals.harness.worker.warm import warm
from evals.harness.worker_link import channel


class _TraceStop(Exception):
    """A candidate error inside the trace session: where it stopped and why (JSON-ready)."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(record["failure"]["reason"])
        self.record = record


class Worker:
    """Request handler holding the target and the loaded candidate operators.

    The candidate comes later, through :meth:`load_candidate` (after the OS sandbox); the
    upstreams' own worker and a self-check never load one.
    """

    def __init__(self, target: Target, candidate_upstream: str | None = None) -> None:
        self.target = target
        self.candidate_upstream = candidate_upstream
        self.ops: Any = None
        self.earlier: list[torch.Tensor] = []
        self.earlier_inputs: list[Inputs] = []
        self._timer: Timer | None = None
        self.timed = TimedOutputs(0)
        self.gate: DeviceGate | None = None
        """The parent's gate for gated wall-clock batches (:mod:`evals.harness.worker.gated`)."""

    def load_candidate(self, library: str) -> None:
        """Load the candidate's library (its static initialisers run here) and find its ops."""
        target = self.target
        torch.ops.load_library(library)  # type: ignore[no-untyped-call]
        ns = target.contract.namespace
        self.ops = getattr(torch.ops, ns)
        for name in target.contract.entry_points:
            try:
                getattr(self.ops, name)
            except (AttributeError, RuntimeError) as exc:
                raise CandidateError(
                    Failure(Code.MISSING_ENTRY_POINT, f"missing entry point {ns}::{name}")
                ) from exc

    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """The candidate call on ``inputs`` (an upstream's in self-check mode)."""
        if self.candidate_upstream is not None:
            return self.target.upstream(self.candidate_upstream).prepare(inputs)
        return self.target.prepare_candidate(self.ops, inputs)

    def run(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Run the candidate once on the inputs of ``req['seed']`` and return its output."""
        scenario = Scenario(**req["scenario"])
        inputs = self.target.make_inputs(scenario, req["seed"])
        guard = InputGuard(inputs, self.target.mutable_inputs(scenario))
        spec = self.target.expected_output(scenario)
        start = time.perf_counter()
        with poisoned_allocations(req.get("poison", "nan"), spec):
            out = self.call(self.prepare(inputs))
        seconds = time.perf_counter() - start
        failure = guard.modified() or aliasing(out, inputs, self.earlier)
        if failure is not None:
            raise CandidateError(failure)
        # The output is kept alive until the next call, so a fresh output can never share its
        # memory. Recent inputs are kept too (up to KEEP_INPUTS_BYTES): later inputs never reuse
        # their addresses, so a pointer-keyed cache misses during verification and is caught,
        # deterministically, by the probe's refilled buffers.
        self.earlier = [out]
        self.earlier_inputs.append(inputs)
        while sum(input_bytes(i) for i in self.earlier_inputs) > KEEP_INPUTS_BYTES:
            self.earlier_inputs.pop(0)
        meta, payload = channel.tensor_to_wire(out)
        return {"ok": True, "tensor": meta, "candidate_s": seconds}, payload

    def call(self, fn: Callable[[], torch.Tensor]) -> torch.Tensor:
        """Call the candidate once, synchronously; its failures become CandidateErrors."""
        try:
            out = fn()
            if self.target.device == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:
            raise candidate_error(exc) from exc
        if not isinstance(out, torch.Tensor):
            reason = f"wrong signature: entry point returned {type(out).__name__}, not a Tensor"
            raise CandidateError(Failure(Code.WRONG_SIGNATURE, reason))
        return out

    def probe(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Anti-caching and race probes on two input sets A and B.

        Returns the outputs for B computed (1) in A's buffers refilled with B's data (same
        pointers, new data), (2) in fresh copies of B (same data, new buffers) and (3) in A's
        buffers again after a few rows of k and v were rewritten in place (``seed_c``), and
        the largest difference among three runs on B (races). Inputs too large for two more
        copies get only (3), in B's own buffers after the three runs (``"skipped": True``).
        """
        scenario = Scenario(**req["scenario"])
        b = self.target.make_inputs(scenario, req["seed_b"])
        if too_large_to_copy_twice(b):  # two more copies would break the memory budget
            return self._probe_in_place(scenario, b, req["seed_c"])
        a = self.target.make_inputs(scenario, req["seed_a"])
        fn_a = self.prepare(a)
        self.call(fn_a)
        for name, t in a.items():
            if isinstance(t, torch.Tensor):
                t.copy_(b[name])
        same_pointers = self.call(fn_a)
        # then a few rows of k and v rewritten in place: a cache keyed on a sample must miss
        self.target.rewrite_kv_part(scenario, a, req["seed_c"])
        # the calls from here on run back to back, as a wall-clock batch's do: a kernel that
        # hands back its previous output when called again soon, with a new q, is caught here
        fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in b.items()}
        fn_fresh, fn_b = self.prepare(fresh), self.prepare(b)
        partly_rewritten = self.call(fn_a)
        new_buffers = self.call(fn_fresh)
        runs = [new_buffers, self.call(fn_b), self.call(fn_b)]
        spread, scale = _spread([r.double() for r in runs])
        metas, payload = channel.pack_tensors([same_pointers, new_buffers, partly_rewritten])
        return {"ok": True, "tensors": metas, "race_spread": spread, "race_scale": scale}, payload

    def _probe_in_place(
        self, scenario: Scenario, b: Inputs, seed_c: int
    ) -> tuple[dict[str, Any], channel.Buffer]:
        """The probe without copies: three runs on B, then B's k and v partly rewritten.

        A cache keyed on B's pointers (or on a sample of k and v) was filled by the runs and
        must miss after the rewrite; no copy of the inputs is made.
        """
        fn_b = self.prepare(b)
        spread, scale = _spread([self.call(fn_b).double() for _ in range(3)])
        self.target.rewrite_kv_part(scenario, b, seed_c)
        metas, payload = channel.pack_tensors([self.call(fn_b)])
        header = {"ok": True, "tensors": metas, "race_spread": spread, "race_scale": scale}
        return {**header, "skipped": True}, payload

    def time(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Time the candidate (``req['candidate']``) or the named upstreams, interleaved.

        A candidate's worker times the candidate alone; the upstreams are timed in a worker
        that never loads a candidate, so nothing a candidate does can slow them down.
        """
        scenario = Scenario(**req["scenario"])
        inputs = self.target.make_timing_inputs(scenario, list(req["seeds"]))
        self.timed = TimedOutputs(KEEP_TIMED_BYTES)
        impls: dict[str, list[Callable[[], object]]] = {}
        if req.get("candidate", True):
            impls["candidate"] = [self.timed.wrap(self.prepare(inp)) for inp in inputs]
        if req.get("null"):  # the round with a kernel that does nothing (round_audit.py)
            impls["null"] = [self.timed.wrap(_null_call(inp)) for inp in inputs]
        unsupported: dict[str, str] = {}
        probe_ms: dict[str, float] = {}
        for name in req["upstreams"]:
            try:
                impls[name], probe_ms[name] = self._probe(name, inputs)
            except Exception as exc:  # an upstream that cannot run it is reported, not fatal
                unsupported[name] = f"{type(exc).__name__}: {one_line(str(exc), 200)}"
        if not impls:
            return {"ok": True, "kept": [], "unsupported": unsupported, **_NOTHING_TIMED}, b""
        settings = TimingSettings(**req["settings"])

        def before(name: str, index: int, trial: int) -> None:
            if settings.fresh_queries:
                self.target.refill_query(
                    scenario, inputs[index], call_seed(req["rng_seed"], trial, name)
                )
            # the null round keeps its outputs as the candidate's round does (the same work)
            self.timed.expect(trial if name in ("candidate", "null") else None)

        start = time.perf_counter()
        try:
            run = measure(
                impls,
                timer=self.timer(),
                settings=settings,
                rng=random.Random(req["rng_seed"]),
                before=before,
            )
        except CandidateError:
            raise
        except Exception as exc:
            raise candidate_error(exc) from exc
        kept = sorted(self.timed.outputs)
        commit: dict[str, list[str]] = {}
        if req.get("commit"):  # inside the round, so inside the parent's clock on it
            commit["digests"] = digests([self.timed.outputs[t] for t in kept], int(req["rng_seed"]))
        return {
            "ok": True,
            "kept": kept,
            **commit,
            "unsupported": unsupported,
            "stats": {name: st.to_json() for name, st in run.stats.items()},
            "latency": {name: st.to_json() for name, st in run.latency.items()},
            "issue": {name: st.to_json() for name, st in run.issue.items()},
            "polluted": dict(run.polluted),
            "spin_us": dict(run.spin_us),
            "busy_s": dict(run.busy_s),
            # an upstream's first call is its probe (FA4's just-in-time compile lands there)
            "first_call_ms": {**run.first_call_ms, **probe_ms},
            "trials": run.trials,
            "stop": run.stop,
            "loop_s": time.perf_counter() - start,
        }, b""

    def timed_outputs(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """The kept outputs of the timed candidate calls the parent chose (``req['trials']``).

        The parent chooses after the calls were made, at random, so no timed call can know
        whether its output will be checked; the rest are dropped.
        """
        chosen = [self.timed.outputs[t] for t in req["trials"] if t in self.timed.outputs]
        if len(chosen) != len(req["trials"]):
            raise CandidateError(Failure(Code.WRONG_SIGNATURE, "a timed call returned no Tensor"))
        self.timed = TimedOutputs(0)
        metas, payload = channel.pack_tensors(chosen)
        return {"ok": True, "tensors": metas}, payload

    def timer(self) -> Timer:
        """The target's timer, made once (a GPU timer holds an L2-flush buffer of 240 MiB)."""
        if self._timer is None:
            self._timer = self.target.timer()
        return self._timer

    def trace(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """One profiler session over ``calls`` timed-like candidate calls per item.

        Each item names a scenario, its timing seeds, a seed for fresh queries and the spin;
        its calls are made as the timing loop makes them (:meth:`Recorder.timed_call`)
        on the timing input sets in turn, numbered ``item * calls + j``. They come after all
        timing, so the profiler's residue cannot slow any timed call. A candidate error stops
        the session; the answer names the call it happened on. The summary is the payload
        (JSON).
        """
        stopped: dict[str, Any] | None = None
        calls = int(req.get("calls", 1))
        try:
            with Recorder() as recorder:
                for item_index, item in enumerate(req["items"]):
                    try:
                        self._trace_item(recorder, item, item_index * calls, calls)
                    except _TraceStop as stop:
                        stopped = stop.record
                        break
            summary, error = recorder.summary(), None
        except Exception as exc:  # the profiler itself failed: report, do not blame the kernel
            summary, error = None, one_line(repr(exc), 200)
        restart = bool(stopped and stopped["restart"])
        header = {"ok": True, "traced": summary is not None, "error": error, "stopped": stopped}
        # the summary travels as the payload: for a full suite it outgrows a header
        payload = json.dumps(summary).encode() if summary is not None else b""
        return {**header, "restart": restart}, payload

    def _trace_item(self, recorder: Recorder, item: dict[str, Any], first: int, calls: int) -> None:
        """One item's traced calls, numbered from ``first``."""
        scenario = Scenario(**item["scenario"])
        with recorder.harness():
            inputs = self.target.make_timing_inputs(scenario, list(item["seeds"]))
            fns = [self.prepare(inp) for inp in inputs]
        timer = self.timer()
        for j in range(calls):
            index = j % len(fns)
            with recorder.harness():
                if item.get("fresh_queries"):
                    seed = call_seed(item["rng_seed"], j, "candidate")
                    self.target.refill_query(scenario, inputs[index], seed)
            try:
                recorder.timed_call(first + j, fns[index], timer.time_call, float(item["spin_us"]))
            except Exception as exc:
                error = exc if isinstance(exc, CandidateError) else candidate_error(exc)
                record = {"index": first + j, "failure": error.failure.to_json()}
                raise _TraceStop({**record, "restart": error.fatal}) from exc
        with recorder.harness():
            del fns, inputs  # this scenario's inputs, before the next one's
            release_cached_memory()

    def _probe(self, name: str, inputs: list[Inputs]) -> tuple[list[Callable[[], object]], float]:
        """An upstream's callables, after one call shows it runs this scenario; that call (ms)."""
        calls: list[Callable[[], object]] = [
            self.target.upstream(name).prepare(inp) for inp in inputs
        ]
        t0 = time.perf_counter()
        calls[0]()
        if self.target.device == "cuda":
            torch.cuda.synchronize()
        return calls, (time.perf_counter() - t0) * 1e3


_NOTHING_TIMED: dict[str, Any] = {
    "tensors": [],
    "stats": {},
    "latency": {},
    "issue": {},
    "polluted": {},
    "spin_us": {},
    "busy_s": {},
    "trials": 0,
    "stop": "converged",
    "loop_s": 0.0,
}
"""A time request with nothing to time (every upstream unsupported)."""


def _null_call(inputs: Inputs) -> Callable[[], torch.Tensor]:
    """A call that does nothing and returns a tensor of the inputs (the audit's null round).

    The query where there is one: an output's shape and dtype, so that keeping and digesting
    the null round's outputs costs what the candidate's cost.
    """
    query = inputs.get("q")
    if isinstance(query, torch.Tensor):
        return lambda: query
    first = next(t for t in inputs.values() if isinstance(t, torch.Tensor))
    return lambda: first


def _spread(runs: list[torch.Tensor]) -> tuple[float, float]:
    """Largest difference between runs on the same input, and the output's largest magnitude."""
    spread = max(float((r - runs[0]).abs().max()) for r in runs[1:])
    return spread, float(runs[0].abs().max())


def serve(sock: socket.socket, worker: Worker) -> None:
    """Answer requests until ``exit`` or until the parent goes away."""
    handlers: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], channel.Buffer]]] = {
        "run": worker.run,
        "time": worker.time,
        "timed_outputs": worker.timed_outputs,
        "probe": worker.probe,
        "trace": worker.trace,
        "wall": WallBatches(worker).handle,
        "warm": functools.partial(warm, worker.target),
    }
    while True:
        try:
            req, _ = channel.recv(sock)
        except channel.ChannelClosed:
            return
        if req.get("op") == "exit":
            return
        if worker.target.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        try:
            header, payload = handlers[req["op"]](req)
            header["worker_s"] = time.perf_counter() - start
            if worker.target.device == "cuda":
                header["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        except CandidateError as exc:
            header = {"ok": False, "failure": exc.failure.to_json(), "restart": exc.fatal}
            payload = b""
        finally:
            # a wall-clock batch keeps its blocks cached for the next batch of the same check
            # (allocating a prefill's outputs afresh each batch costs more than the calls)
            keeps = req.get("op") == "wall" and not req.get("drop")
            if worker.target.device == "cuda" and not keeps:
                with contextlib.suppress(Exception):  # after a CUDA error this raises too
                    release_cached_memory()
        channel.send(sock, header, payload)
        if header.get("restart"):
            return
