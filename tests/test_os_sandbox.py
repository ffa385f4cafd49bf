"""The worker's OS sandbox (``evals/harness/sandbox/os_sandbox.py``), applied in a child process:
what the CPU and GPU policies refuse (EPERM) or kill (SIGSYS), and that the work an honest
worker does still runs; then the record a verdict carries."""

import ctypes.util
import json
import os
import signal
import subprocess
import sys

import pytest

from evals.harness import RunSettings, evaluate, get_target
from evals.harness.sandbox.os_sandbox import CPU_POLICY, SANDBOX_ENV, apply
from evals.harness.verdict.report import render
from evals.harness.worker_link.worker_client import WorkerClient
from tests.helpers import ROOT, START_CPU, failures_of

pytestmark = pytest.mark.skipif(
    ctypes.util.find_library("seccomp") is None,
    reason="libseccomp is not installed here: the sandbox reports itself unavailable",
)

# torch's thread pool first (the CPU policy lets no thread start later), then the filter
PRELUDE = """
import errno, json, os, socket, subprocess, sys, tempfile, threading
import torch
torch.set_num_threads(2)
a = torch.randn(128, 128)
torch.mm(a, a)
from evals.harness.sandbox import os_sandbox
print(json.dumps(os_sandbox.apply(os_sandbox.policy_for(sys.argv[1]))), flush=True)
"""

CPU_WORK = """
found = {}
try:
    open(sys.argv[2] + "/written", "w")
    found["write"] = "opened"
except OSError as exc:
    found["write"] = errno.errorcode[exc.errno]
try:
    os.mkdir(sys.argv[2] + "/folder")
    found["mkdir"] = "made"
except OSError as exc:
    found["mkdir"] = errno.errorcode[exc.errno]
try:
    socket.socket(socket.AF_UNIX)
    found["local_socket"] = "made"
except OSError as exc:
    found["local_socket"] = errno.errorcode[exc.errno]
try:
    threading.Thread(target=lambda: None).start()
    found["thread"] = "started"
except RuntimeError:
    found["thread"] = "refused"
with open(os.path.join("evals", "harness", "sandbox", "os_sandbox.py")) as f:
    found["read"] = len(f.read()) > 0
found["allocated"] = len(bytearray(64 << 20))
b = torch.randn(256, 256)
found["matmul"] = bool(torch.allclose(torch.mm(b, torch.eye(256)), b))
print(json.dumps(found), flush=True)
"""

GPU_WORK = """
found = {}
t = threading.Thread(target=lambda: found.setdefault("thread", "ran"))
t.start()
t.join()
with tempfile.TemporaryDirectory() as tmp:  # as the trace check exports its trace
    with open(tmp + "/trace.json", "w") as f:
        f.write("{}")
    os.symlink(tmp + "/trace.json", tmp + "/link")  # the profiler's session made links
    found["temp_file"] = open(tmp + "/link").read()
print(json.dumps(found), flush=True)
"""


def run_sandboxed(device: str, body: str, tmp: str = "/nonexistent") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != SANDBOX_ENV}
    return subprocess.run([sys.executable, "-c", PRELUDE + body, device, tmp], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cpu_policy_refuses_writes_threads_and_local_sockets_but_runs_torch(tmp_path):
    proc = run_sandboxed("cpu", CPU_WORK, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    record, found = (json.loads(line) for line in proc.stdout.splitlines()[-2:])
    assert record["seccomp"].startswith("active: allow-list of ")
    assert record["seccomp"].endswith(
        "files read-only; no network; no new processes; no new threads")
    assert record["no_new_privs"] is True and record["core_dumps"] is False
    assert found == {"write": "EPERM", "mkdir": "EPERM", "local_socket": "EACCES",
                     "thread": "refused", "read": True, "allocated": 64 << 20, "matmul": True}
    assert list(tmp_path.iterdir()) == []


def test_gpu_policy_lets_threads_start_and_temporary_files_be_written():
    proc = run_sandboxed("cuda", GPU_WORK)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record, found = (json.loads(line) for line in proc.stdout.splitlines()[-2:])
    assert "file writes allowed" in record["seccomp"] and "threads allowed" in record["seccomp"]
    assert found == {"thread": "ran", "temp_file": "{}"}


@pytest.mark.parametrize(("device", "call"), [
    ("cpu", "socket.socket(socket.AF_INET, socket.SOCK_STREAM)"),
    ("cuda", "socket.socket(socket.AF_INET, socket.SOCK_STREAM)"),
    ("cpu", "os.fork()"),
    ("cuda", "os.fork()"),
    ("cpu", "subprocess.run(['true'])"),
    ("cpu", "os.kill(os.getppid(), 0)"),
    ("cpu", "os.symlink('/etc/hostname', '/nonexistent/link')"),
])
def test_forbidden_calls_kill_the_process_with_sigsys(device, call):
    proc = run_sandboxed(device, f"os.kill(os.getpid(), 0)\n{call}\nprint('survived')\n")
    assert proc.returncode == -signal.SIGSYS, (proc.returncode, proc.stderr[-2000:])
    assert "active: allow-list" in proc.stdout and "survived" not in proc.stdout


def test_the_switch_turns_it_off_and_reaches_a_cleaned_worker_environment(tmp_path):
    assert apply(CPU_POLICY, {SANDBOX_ENV: "off"})["seccomp"] == f"off: {SANDBOX_ENV}=off"
    client = WorkerClient(get_target("cpu_attention"), None, tmp_path / "log", clean_env=True)
    assert client.environment({"PATH": "/usr/bin", SANDBOX_ENV: "off"})[SANDBOX_ENV] == "off"


def test_verdict_and_report_say_what_protected_the_candidate(monkeypatch):
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    target = get_target("cpu_attention")
    first = target.load_suite("smoke").scenarios[0].id
    verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                   scenario_ids=(first,)))
    assert verdict.status == "ok", failures_of(verdict)
    protections = verdict.to_json()["protections"]
    assert protections["seccomp"].startswith("active: allow-list of ")
    assert protections["no_new_privs"] is True
    assert protections["memory_limit_bytes"] == target.limits.memory_limit_bytes
    assert protections["environment"] == "inherited from the caller"
    assert not [f for f in verdict.flags if "without the OS sandbox" in f]
    assert "sandbox: seccomp active: allow-list of " in render(verdict)
