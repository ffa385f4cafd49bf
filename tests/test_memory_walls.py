"""The parent's memory is out of the candidate's reach (evals/harness/sandbox/memory_walls.py).

The parent holds the run's secret seed; a sandboxed worker of the same user opened its
parent's ``/proc/PID/mem`` and found a secret planted there. Each process test below plays
both sides with real processes: a parent that plants a secret (sealed or not, as its user or as
``nobody``), and a forked child that installs the worker's real sandbox and searches the
parent's writable memory for the secret through ``/proc``.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evals.harness.pipeline.runner import evaluate
from evals.harness.run_settings import RunSettings
from evals.harness.sandbox import memory_walls
from tests.helpers import ROOT

CHEAT = ROOT / "tests" / "cheats" / "cpu_attention" / "parent_memory.cpp"
ONE_SCENARIO = ("smoke-fp32-d64-s128-h4-full",)

_PLAY = r"""
import json, os, sys
from evals.harness.sandbox import memory_walls, os_sandbox
seal, sandbox, as_nobody = (a == "1" for a in sys.argv[1:4])
secret = ("kernelseek-secret-" + os.urandom(12).hex()).encode()
if as_nobody:
    os.setgid(65534)
    os.setuid(65534)
libc = __import__("ctypes").CDLL(None)
libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: changing users cleared it
if seal:
    memory_walls.seal()
read_end, write_end = os.pipe()
if os.fork() == 0:
    env = {} if sandbox else {"KERNELSEEK_SANDBOX": "off"}
    record = os_sandbox.apply(os_sandbox.policy_for("cpu"), env)
    parent, found = os.getppid(), "denied"
    try:
        with open(f"/proc/{parent}/maps") as maps, open(f"/proc/{parent}/mem", "rb", 0) as mem:
            found = "not found"
            for line in maps.read().splitlines():
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if " rw-p " not in line or hi - lo > 256 << 20:
                    continue
                mem.seek(lo)
                if secret in mem.read(hi - lo):
                    found = "found"
                    break
    except OSError as exc:
        found = f"denied: {exc.strerror}"
    os.write(write_end, json.dumps({"found": found, "ptrace": record.get("ptrace")}).encode())
    os._exit(0)
os.wait()
print(os.read(read_end, 4096).decode())
"""


def _play(*, seal: bool, sandbox: bool, as_nobody: bool) -> dict[str, str]:
    flags = [str(int(x)) for x in (seal, sandbox, as_nobody)]
    proc = subprocess.run([sys.executable, "-c", _PLAY, *flags], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _root() -> bool:
    return os.geteuid() == 0


def _can_ptrace() -> bool:
    return bool(memory_walls.holds_ptrace(os.getpid()))


def _yama_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0  # no Yama: the classic rule, same user and dumpable


@pytest.mark.skipif(_yama_scope() > 0, reason="Yama already keeps a child out of its parent")
def test_a_sandboxed_worker_of_the_parents_user_reads_an_unsealed_parent():
    # the hole itself: the seccomp filter lets the worker open files for reading
    seen = _play(seal=False, sandbox=True, as_nobody=_root())
    assert seen["found"] == "found", seen


def test_a_sealed_parent_is_closed_to_its_sandboxed_worker():
    seen = _play(seal=True, sandbox=True, as_nobody=_root())
    assert seen["found"].startswith("denied"), seen


@pytest.mark.skipif(not _root() or not _can_ptrace(), reason="needs root with CAP_SYS_PTRACE")
def test_roots_worker_reads_even_a_sealed_parent_until_it_drops_cap_sys_ptrace():
    assert _play(seal=True, sandbox=False, as_nobody=False)["found"] == "found"
    seen = _play(seal=True, sandbox=True, as_nobody=False)
    assert seen["found"].startswith("denied") and seen["ptrace"] == "dropped", seen


def test_dropping_the_capability_is_what_the_kernel_then_reports():
    code = ("import os; from evals.harness.sandbox import memory_walls as m; "
            "print(m.drop_ptrace(), m.holds_ptrace(os.getpid()), m.drop_ptrace(), sep='|')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    first, holds, again = proc.stdout.strip().split("|")
    assert first == ("dropped" if _can_ptrace() else "not held")
    assert (holds, again) == ("False", "not held")


def test_the_parent_memory_cheat_learns_nothing_and_the_verdict_says_why(tmp_path):
    log = tmp_path / "worker.log"
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEAT, suite="smoke",
                                   scenario_ids=ONE_SCENARIO, keep_worker_log=log))
    assert verdict.status == "ok", [r.failure for r in verdict.results]
    assert verdict.checks["parent_memory"].startswith("sealed: ")
    assert verdict.protections is not None
    assert verdict.protections["ptrace"] in ("dropped", "not held")
    assert re.search(r"parent memory: refused", log.read_text()), log.read_text()[-2000:]


@pytest.mark.long  # a second build and check of the cheat
@pytest.mark.skipif(not _root() or not _can_ptrace(), reason="needs root with CAP_SYS_PTRACE")
def test_the_parent_memory_cheat_reads_its_parent_with_the_sandbox_off(tmp_path, monkeypatch):
    # its read is real: as root, with the worker keeping CAP_SYS_PTRACE, it gets a page
    monkeypatch.setenv("KERNELSEEK_SANDBOX", "off")
    log = tmp_path / "worker.log"
    verdict = evaluate(RunSettings("check", "cpu_attention", CHEAT, suite="smoke",
                                   scenario_ids=ONE_SCENARIO, keep_worker_log=log))
    assert verdict.status == "ok", [r.failure for r in verdict.results]
    assert re.search(r"parent memory: read 4096 bytes", log.read_text()), log.read_text()[-2000:]
