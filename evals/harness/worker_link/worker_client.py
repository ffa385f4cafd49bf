"""Parent side of the worker: start it, send requests with deadlines, report deaths and hangs."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evals.harness.failures import PARENT_ONLY, Code, Failure, one_line
from evals.harness.measurement.stream_gate import Gate
from evals.harness.sandbox import memory_walls
from evals.harness.sandbox.hygiene import clean_environment, with_package_root
from evals.harness.sandbox.os_sandbox import SANDBOX_ENV
from evals.harness.targets import Target
from evals.harness.worker_link import channel
from evals.harness.worker_link.budget import Budget
from evals.harness.worker_link.process_state import (
    OOM_SCORE_ADJ,
    oom_score_adj,
    signal_name,
    stopped,
)
from evals.harness.worker_link.worker_log import CappedLog
from evals.worker_entry import WORKER_DIR_ENV

STARTUP_TIMEOUT_S = 180.0
_LAST_REQUEST_S = 0.5
"""Seconds a request still gets once the candidate's budget is spent: an answer already on its way
arrives; the worker's further work does not."""


class WorkerFailure(Exception):
    """The worker died, hung or refused the candidate; carries the failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


class WorkerClient:
    """One worker process running one candidate library.

    Args:
        target: The target (the worker instantiates it again by name).
        library: The candidate's built shared library (None with ``candidate_upstream``, and
            for the upstreams' own worker).
        log_path: Where to keep the worker's output (capped, see :mod:`worker_log`) when it
            exits; None keeps it only in memory, for the reasons of crashes.
        candidate_upstream: Self-check mode: this upstream stands in for the candidate.
        clean_env: Start the worker in a cleaned environment (``score``).
        gated: Give a GPU target's worker a gate (:attr:`gate`, made afresh at each start)
            for the wall-clock check's gated batches
            (:mod:`evals.harness.clock_checks.gated_batch`): the candidate's (or an upstream
            judged as one) for its own, the upstreams' for the null batches subtracted from
            them (:mod:`evals.harness.clock_checks.null_batches`).
    """

    def __init__(
        self,
        target: Target,
        library: Path | None,
        log_path: Path | None = None,
        *,
        candidate_upstream: str | None = None,
        clean_env: bool = False,
        gated: bool = False,
    ) -> None:
        self.clean_env = clean_env
        self.gated = gated and target.device == "cuda"
        self.gate: Gate | None = None
        """The parent's side of the worker's gate while it runs (see ``gated``)."""
        self.target = target
        self.library = library
        self.log_path = log_path
        self.candidate_upstream = candidate_upstream
        self.proc: subprocess.Popen[bytes] | None = None
        self.output: CappedLog | None = None
        self.sock: socket.socket | None = None
        self.request_s = 0.0
        """Seconds spent in requests, from sending to the whole answer received."""
        self.worker_s = 0.0
        """Of those, seconds the worker spent handling them (the rest is transfer and waiting)."""
        self.protections: dict[str, Any] | None = None
        """What protected the worker's process, from its ready message (:mod:`os_sandbox`),
        and how its environment was made."""
        self.private_dir: Path | None = None
        """The folder the candidate's worker alone may write to (made afresh at each start)."""
        self.left_behind: list[str] = []
        """Files a candidate's worker left in its private folder, over all its starts."""
        self.budget: Budget | None = None
        """The candidate's time budget, set on its worker: no request runs past it (it counts
        :attr:`request_s`)."""

    @property
    def runs_candidate(self) -> bool:
        """Whether this worker loads a candidate's library (not an upstream self-check)."""
        return self.library is not None and self.candidate_upstream is None

    @property
    def threads(self) -> int:
        """Intra-op threads given to candidate and upstream."""
        return self.target.limits.threads or len(os.sched_getaffinity(0))

    def environment(self, outer: Mapping[str, str]) -> dict[str, str]:
        """The worker's environment, from ``outer`` (cleaned for ``score``).

        CPU targets pin OpenMP threads (the candidate's and torch's) to cores. GPU targets do
        not: libgomp would pin the worker's main thread to one core, and every thread started
        later (the CUDA driver's too) would inherit that single core.
        """
        base = clean_environment(outer) if self.clean_env else with_package_root(outer)
        env = dict(base, OMP_NUM_THREADS=str(self.threads), PYTHONUNBUFFERED="1")
        if self.private_dir is not None:  # where temporary files and caches may go
            folder = str(self.private_dir)
            env.update({WORKER_DIR_ENV: folder, "TMPDIR": folder, "XDG_CACHE_HOME": folder})
            env.update({"CUDA_CACHE_PATH": folder, "TORCHINDUCTOR_CACHE_DIR": folder})
        if SANDBOX_ENV in outer:  # the debugging switch reaches the worker, cleaned or not
            env[SANDBOX_ENV] = outer[SANDBOX_ENV]
        if self.target.device == "cpu":
            env.setdefault("OMP_PROC_BIND", "close")
            env.setdefault("OMP_PLACES", "cores")
        return env

    def start(self) -> None:
        """Start the worker and wait until it has loaded the candidate.

        Raises:
            WorkerFailure: The library failed to load, lacks an entry point, or the worker died.

        """
        parent, child = socket.socketpair()
        limit = self.target.limits.memory_limit_bytes
        if self.runs_candidate:
            self.private_dir = Path(tempfile.mkdtemp(prefix="kernelseek-worker-"))
        env = self.environment(os.environ)
        self.gate = Gate() if self.gated else None
        fds = (child.fileno(),) if self.gate is None else (child.fileno(), self.gate.fd)

        first_to_go = self.runs_candidate

        def limit_memory() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            if first_to_go:  # out of memory (its heap, files it filled a tmpfs with), it goes
                with contextlib.suppress(OSError):  # first, never the parent with the verdict
                    Path("/proc/self/oom_score_adj").write_text(f"{OOM_SCORE_ADJ}\n")

        cmd = [
            sys.executable,
            "-P",
            "-m",
            "evals.worker_entry",
            str(child.fileno()),
            self.target.name,
            str(self.library or "-"),
            str(self.threads),
            self.candidate_upstream or "-",
            "-" if self.gate is None else str(self.gate.fd),
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=fds,
            start_new_session=True,
            preexec_fn=limit_memory,
        )
        assert self.proc.stdout is not None
        self.output = CappedLog(self.proc.stdout)
        child.close()
        self.sock = parent
        header, _ = self._receive(time.monotonic() + STARTUP_TIMEOUT_S, "starting")
        if not header.get("ok"):
            self.close()
            raise WorkerFailure(self._reported(header.get("failure")))
        raw = header.get("protections")
        how = "cleaned" if self.clean_env else "inherited from the caller"
        self.protections = {**(raw if isinstance(raw, dict) else {}), "environment": how}
        if first_to_go:
            self.protections["oom_score_adj"] = oom_score_adj(self.proc.pid)
        if self.runs_candidate:
            self._confirm_sandbox()

    def _confirm_sandbox(self) -> None:
        """Hold the worker's claim of a seccomp filter to the kernel's own word (``/proc``).

        The claim comes from a process the candidate's code has run in; the kernel's status
        line for it does not.
        """
        assert self.proc is not None and self.protections is not None
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            self.protections["seccomp_seen_by_parent"] = "unknown: no /proc"
            return
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        mode, nnp = fields.get("Seccomp", "?").strip(), fields.get("NoNewPrivs", "?").strip()
        self.protections["seccomp_seen_by_parent"] = f"Seccomp {mode}, NoNewPrivs {nnp}"
        reason = None
        if str(self.protections.get("seccomp", "")).startswith("active") and mode != "2":
            reason = f"the worker claims an active seccomp filter; the kernel says Seccomp {mode}"
        elif "ptrace" in self.protections and memory_walls.ptrace_held(fields):
            reason = "the worker holds CAP_SYS_PTRACE (it could read the parent's memory)"
        if reason is not None:
            self.close()
            raise WorkerFailure(Failure(Code.SANDBOX_VIOLATION, reason))

    def request(
        self, header: dict[str, Any], timeout_s: float | None = None
    ) -> tuple[dict[str, Any], channel.Buffer]:
        """Send a request and wait for its answer.

        Raises:
            WorkerFailure: The candidate failed (answer with ``ok: false``), the worker died
                (crash) or did not answer in time (hang); after a death or hang the worker
                is gone and must be restarted.

        """
        if self.sock is None:
            self.start()
        assert self.sock is not None
        timeout = timeout_s if timeout_s is not None else self.target.limits.call_timeout_s
        try:
            channel.send(self.sock, header)
        except OSError:
            raise WorkerFailure(self._death("receiving a request")) from None
        start = time.monotonic()
        end, doing = start + timeout, str(header.get("op", "?"))
        left = self.budget.left_s(self.request_s) if self.budget is not None else timeout
        if left < timeout:
            end, doing = start + max(left, _LAST_REQUEST_S), f"budget:{doing}"
        try:
            answer, payload = self._receive(end, doing)
        finally:
            self.request_s += time.monotonic() - start
        worker_s = answer.get("worker_s")
        self.worker_s += float(worker_s) if isinstance(worker_s, int | float) else 0.0
        if not answer.get("ok"):
            if answer.get("restart"):  # e.g. a CUDA error: the worker's context is unusable
                self.kill()
            raise WorkerFailure(self._reported(answer.get("failure")))
        return answer, payload

    def _reported(self, raw: object) -> Failure:
        """The failure the worker reports, as the parent attributes it.

        A process that loaded the candidate reports only the candidate's failures: a code
        that would blame the harness or the machine (:data:`PARENT_ONLY`), or one the parent
        does not know, is the candidate's exception, whatever reason comes with it.
        """
        failure = Failure.from_json(raw)
        if not self.runs_candidate or failure.code not in PARENT_ONLY:
            return failure
        said = raw.get("code") if isinstance(raw, dict) else None
        reason = f"the candidate's worker answered {said!r}, a code only the harness gives: "
        return Failure(Code.EXCEPTION, reason + failure.reason)

    def _receive(self, deadline: float, doing: str) -> tuple[dict[str, Any], channel.Buffer]:
        assert self.sock is not None
        try:
            return channel.recv(self.sock, deadline, pinned=self.target.device == "cuda")
        except TimeoutError:
            self.kill()
            if doing.startswith("budget:") and self.budget is not None:
                reason = self.budget.reason(f"{doing.removeprefix('budget:')}, unanswered")
            else:
                limit = self.target.limits.call_timeout_s
                reason = f"no answer within {limit:.0f} s ({doing}): hang"
            raise WorkerFailure(Failure(Code.TIMEOUT, reason)) from None
        except (channel.ChannelClosed, OSError, ValueError):
            raise WorkerFailure(self._death(doing)) from None
        except MemoryError:  # a length no honest answer has: the parent cannot hold it
            self.kill()
            reason = f"the worker's answer ({doing}) announced more bytes than the parent can hold"
            raise WorkerFailure(Failure(Code.CRASH, reason)) from None

    def _death(self, doing: str) -> Failure:
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        tail = self.log_tail()  # before close(), which hands the output on and drops it
        self.close()
        detail = f"; last output: {tail}" if tail else ""
        if rc == -signal.SIGSYS:
            reason = (
                "the candidate made a system call the sandbox forbids (killed by SIGSYS) "
                f"while {doing}{detail}"
            )
            return Failure(Code.SANDBOX_VIOLATION, reason)
        if rc is not None and rc < 0:
            reason = f"candidate crashed the worker with {signal_name(-rc)} while {doing}{detail}"
        else:
            reason = f"worker exited with status {rc} while {doing}{detail}"
        return Failure(Code.CRASH, reason)

    def log_tail(self, lines: int = 2) -> str:
        """The last lines the worker printed, on one line."""
        if self.output is None:
            return ""
        self.output.join(2.0)
        return one_line(" | ".join(self.output.tail_lines(lines)), 200)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The worker's processes stopped (SIGSTOP) for the block, continued after it.

        The block starts once every thread of the worker is seen stopped (a signal is
        delivered asynchronously), or after a second.
        """
        proc = self.proc
        if proc is None or proc.poll() is not None:
            yield
            return
        os.killpg(proc.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 1.0
            while not stopped(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.0005)
            yield
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """Kill the worker's whole process group."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.close()

    def close(self) -> None:
        """Ask the worker to exit (if alive) and release the channel."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                channel.send(self.sock, {"op": "exit"})
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._keep_output()
        self._sweep()
        gate, self.gate = self.gate, None
        if gate is not None:  # the worker that mapped it is gone
            gate.close()

    def _sweep(self) -> None:
        """Note the files the exited worker left in its private folder, then remove it."""
        folder, self.private_dir = self.private_dir, None
        if folder is None or (self.proc is not None and self.proc.poll() is None):
            return
        # never through a link the candidate left there (one to / would walk the whole disk)
        for top, dirs, names in os.walk(folder, followlinks=False):
            links = [d for d in dirs if Path(top, d).is_symlink()]  # reported, not entered
            for name in sorted([*names, *links]):
                path = Path(top, name)
                size = path.lstat().st_size
                self.left_behind.append(f"{path.relative_to(folder)} ({size} bytes)")
        shutil.rmtree(folder, ignore_errors=True)

    def _keep_output(self) -> None:
        """Append the exited worker's capped output to ``log_path`` (when asked to keep it)."""
        if self.output is None:
            return
        self.output.join(2.0)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "a") as log:
                log.write(f"== worker pid {self.proc.pid if self.proc else '?'} ==\n")
                log.write(self.output.text() + "\n")
        self.output = None
