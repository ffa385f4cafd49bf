"""The host's GPU pool: concurrent samples (threads, processes) each lease their own GPU.

Fake devices throughout (``KERNELSEEK_GPUS`` and a pool folder under tmp_path); no GPU needed.
Nothing here asserts how long anything took: waits are observed through events and order.
"""

import asyncio
import os
import signal
import subprocess
import sys
import threading

import pytest
from inspect_ai.util import ExecResult

from evals.bench.config.settings import TaskSettings
from evals.bench.scoring import gpu_pool, harness_exec
from evals.bench.scoring.faults import ENVIRONMENT
from evals.bench.scoring.gpu_pool import (
    GPUS_ENV,
    POOL_DIR_ENV,
    SHARE_ENV,
    Gpu,
    PoolBusyError,
    gpu_lease,
    pool_gpus,
)
from tests.helpers import ROOT

GPU_TASK = TaskSettings(target="fa3_hopper", suite="smoke", score_suite="smoke", sandbox="local")
CPU_TASK = TaskSettings(
    target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa", sandbox="local"
)
LONG = 120  # seconds: only a safety net against a hang, never a measured bound

# A separate process holding one lease: prints its GPU, holds it until stdin closes or a line.
CHILD = """
import sys
from evals.bench.scoring.gpu_pool import gpu_lease
with gpu_lease(what="test child") as gpu:
    print(gpu.key if gpu else "none", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def pool(tmp_path, monkeypatch):
    """Two fake GPUs, one run each, a private pool folder, fast polling; the children's env."""
    monkeypatch.setenv(GPUS_ENV, "0,1")
    monkeypatch.setenv(SHARE_ENV, "1")
    monkeypatch.setenv(POOL_DIR_ENV, str(tmp_path / "pool"))
    monkeypatch.setattr(gpu_pool, "POLL_S", 0.01)
    return dict(os.environ)


def _child(env):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    leased = proc.stdout.readline().strip()  # blocks until the child holds its lease
    assert leased, "the child exited without a lease"
    return proc, leased


def _end(proc):
    proc.stdin.close()
    assert proc.wait(timeout=LONG) == 0


class Holder(threading.Thread):
    """A thread that leases a GPU, says which, and holds it until ``release`` is set."""

    def __init__(self, **lease):
        super().__init__(daemon=True)
        self.lease, self.leased, self.release = lease, threading.Event(), threading.Event()
        self.gpu = None

    def run(self):
        with gpu_lease(what="test thread", **self.lease) as gpu:
            self.gpu = gpu
            self.leased.set()
            self.release.wait(LONG)

    def held(self):
        assert self.leased.wait(LONG)
        return self.gpu


def test_two_threads_get_different_gpus_and_a_third_waits_for_a_released_one(pool):
    first, second = Holder(), Holder()
    first.start()
    second.start()
    assert {first.held().key, second.held().key} == {"gpu-index-0", "gpu-index-1"}
    told = []
    waiting = threading.Event()
    third = Holder(notify=lambda line: (told.append(line), waiting.set()))
    third.start()
    assert waiting.wait(LONG)
    assert not third.leased.is_set()  # both leased: it waits, and says so
    assert "waiting for a free GPU" in told[0]
    second.release.set()
    assert third.held() == second.gpu  # the released GPU, never the one still held
    assert "leased after waiting" in told[-1]
    for holder in (first, third):
        holder.release.set()
        holder.join(LONG)


def test_a_released_gpu_is_reused_first_free_first(pool):
    with gpu_lease(what="a") as a:
        assert a == Gpu(index=0, uuid=None)
        with gpu_lease(what="b") as b:
            assert b == Gpu(index=1, uuid=None)
    with gpu_lease(what="c") as c:
        assert c == a


def test_a_gpu_is_shared_only_once_every_gpu_has_a_run(pool, monkeypatch):
    monkeypatch.setenv(SHARE_ENV, "2")
    holders = [Holder() for _ in range(4)]
    for holder in holders:
        holder.start()
        holder.held()  # in order: each lease sees the ones before it
    keys = [h.gpu.key for h in holders]
    assert sorted(keys[:2]) == ["gpu-index-0", "gpu-index-1"]  # first one run per GPU
    assert sorted(keys[2:]) == ["gpu-index-0", "gpu-index-1"]  # then the second runs
    told = []
    fifth = Holder(notify=told.append)
    fifth.start()
    assert holders[1].leased.is_set() and not fifth.leased.wait(0.3)  # 2 x 2 leased: it waits
    holders[1].release.set()
    assert fifth.held() == holders[1].gpu and "fully leased" in told[0]
    for holder in (*holders, fifth):
        holder.release.set()
        holder.join(LONG)


@pytest.mark.parametrize("share", ["0", "-1", "two", "1.5"])
def test_a_bad_share_is_refused_in_one_line(pool, monkeypatch, share):
    monkeypatch.setenv(SHARE_ENV, share)
    with pytest.raises(ValueError, match=SHARE_ENV), gpu_lease(what="x"):
        pass


def test_separate_processes_get_different_gpus(pool):
    one, first = _child(pool)
    two, second = _child(pool)
    try:
        assert {first, second} == {"gpu-index-0", "gpu-index-1"}
        with pytest.raises(PoolBusyError), gpu_lease(what="third", timeout_s=0):
            pass  # both are leased by the children
    finally:
        _end(one)
        _end(two)
    with gpu_lease(what="after", timeout_s=LONG) as gpu:
        assert gpu.key == "gpu-index-0"


def test_a_killed_holder_frees_its_gpu(pool, monkeypatch):
    monkeypatch.setenv(GPUS_ENV, "5")
    proc, leased = _child({**pool, GPUS_ENV: "5"})
    assert leased == "gpu-index-5"
    with pytest.raises(PoolBusyError), gpu_lease(what="while alive", timeout_s=0):
        pass
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=LONG) == -signal.SIGKILL
    with gpu_lease(what="after the crash", timeout_s=LONG) as gpu:
        assert gpu == Gpu(index=5, uuid=None)
    proc.stdin.close()


def test_an_empty_pool_yields_none(tmp_path, monkeypatch):
    monkeypatch.delenv(GPUS_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(POOL_DIR_ENV, str(tmp_path / "pool"))
    monkeypatch.setattr(gpu_pool, "QUERY", (str(tmp_path / "no-nvidia-smi"),))
    with gpu_lease(what="nothing") as gpu:
        assert gpu is None
    assert not (tmp_path / "pool").exists()


def test_nvidia_smi_lists_the_pool_and_resolves_kernelseek_gpus(tmp_path, monkeypatch):
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\necho '0, GPU-aaa'\necho '1, GPU-bbb'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(GPUS_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert pool_gpus() == (Gpu(index=0, uuid="GPU-aaa"), Gpu(index=1, uuid="GPU-bbb"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the user's pin stands: no pool
    assert pool_gpus() == ()
    monkeypatch.setenv(GPUS_ENV, "GPU-bbb, 0")  # named by UUID or by index, in that order
    assert pool_gpus() == (Gpu(index=1, uuid="GPU-bbb"), Gpu(index=0, uuid="GPU-aaa"))
    assert pool_gpus()[0].env() == {"CUDA_VISIBLE_DEVICES": "GPU-bbb"}  # by UUID: unambiguous


class FakeSandbox:
    """The sandbox as run_harness uses it: records each exec's environment."""

    def __init__(self, during=None):
        self.envs, self.during = [], during

    async def read_file(self, file, text=True):
        return b"kernel source"

    async def exec(self, cmd, input=None, env=None, timeout=None, **kwargs):
        self.envs.append(env)
        if self.during is not None:
            await self.during()
        return ExecResult(True, 2, "no verdict here", "")


def _run(settings, fake, monkeypatch, timeout=LONG):
    monkeypatch.setattr(harness_exec, "sandbox", lambda name=None: fake)  # the scorer service too
    return asyncio.run(harness_exec.run_harness(settings, "check", suite="smoke", timeout=timeout))


def test_run_harness_pins_a_gpu_target_on_the_local_sandbox_to_its_lease(pool, monkeypatch):
    monkeypatch.setenv(GPUS_ENV, "3")

    async def held():  # while the harness runs, its GPU is leased
        with pytest.raises(PoolBusyError), gpu_lease(what="probe", timeout_s=0):
            pass

    fake = FakeSandbox(held)
    run = _run(GPU_TASK, fake, monkeypatch)
    assert fake.envs[0]["CUDA_VISIBLE_DEVICES"] == "3" and "PYTHONPATH" in fake.envs[0]
    assert run.gpu == "3" and run.fault is not None  # no verdict: the harness's fault
    with gpu_lease(what="after", timeout_s=0) as gpu:  # given back when the run ended
        assert gpu.index == 3


def test_run_harness_leaves_the_cpu_target_and_container_sandboxes_alone(pool, monkeypatch):
    fake = FakeSandbox()
    assert _run(CPU_TASK, fake, monkeypatch).gpu is None
    docker = TaskSettings(target="fa3_hopper", suite="smoke", score_suite="smoke")
    assert _run(docker, fake, monkeypatch).gpu is None
    assert "CUDA_VISIBLE_DEVICES" not in fake.envs[0] and fake.envs[1] is None


def test_run_harness_on_an_empty_pool_sets_no_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv(GPUS_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_pool, "QUERY", (str(tmp_path / "no-nvidia-smi"),))
    fake = FakeSandbox()
    assert _run(GPU_TASK, fake, monkeypatch).gpu is None
    assert "CUDA_VISIBLE_DEVICES" not in fake.envs[0]


def test_concurrent_samples_run_on_different_gpus(pool, monkeypatch):
    async def both():
        entered = asyncio.Event()
        runs = []

        async def during():  # the first run holds its GPU until the second has started
            runs.append(None)
            if len(runs) == 2:
                entered.set()
            await asyncio.wait_for(entered.wait(), LONG)

        fake = FakeSandbox(during)
        monkeypatch.setattr(harness_exec, "sandbox", lambda: fake)
        done = await asyncio.gather(
            *(
                harness_exec.run_harness(GPU_TASK, "check", suite="smoke", timeout=LONG)
                for _ in "ab"
            )
        )
        return fake, done

    fake, done = asyncio.run(both())
    assert sorted(env["CUDA_VISIBLE_DEVICES"] for env in fake.envs) == ["0", "1"]
    assert sorted(run.gpu for run in done) == ["0", "1"]


def test_a_pool_busy_past_the_timeout_is_the_environments_fault(pool, monkeypatch):
    monkeypatch.setenv(GPUS_ENV, "0")
    fake = FakeSandbox()
    with gpu_lease(what="the other sample"):
        run = _run(GPU_TASK, fake, monkeypatch, timeout=0)
    assert run.fault.startswith(ENVIRONMENT) and "no GPU" in run.fault
    assert fake.envs == []  # the harness never started


def test_a_gpu_with_a_uuid_is_named_by_it_and_the_worker_keeps_the_order():
    from evals.harness.sandbox.hygiene import clean_environment

    assert Gpu(index=2, uuid="GPU-abc").env() == {"CUDA_VISIBLE_DEVICES": "GPU-abc"}
    env = Gpu(index=2, uuid=None).env()
    assert clean_environment({**env, "LD_PRELOAD": "x"}).items() >= env.items()
