"""End to end through Inspect on the CPU target, local sandbox, scripted mockllm outputs."""

import subprocess
import sys

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, kernel_task
from evals.bench.task import TaskArgumentError
from tests.helpers import CPU_KERNELS, ROOT

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa",
             sandbox="local")


def _out(tool: str, **args) -> ModelOutput:
    out = ModelOutput.for_tool_call(model="mockllm/model", tool_name=tool, tool_arguments=args)
    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return out


def _install(name: str) -> ModelOutput:
    return _out("bash", command=f"cp {CPU_KERNELS / name} kernel.cpp")


def _run(outputs, tmp_path, **settings):
    task = kernel_task(TaskSettings(**{**SMOKE, **settings}), version=1, root=ROOT)
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    return log


def _score(log):
    return log.samples[0].scores["kernel_speedup"]


@pytest.mark.long
def test_wrong_kernel_is_sent_back_then_faster_kernel_scores(tmp_path):
    start_log = _run([_out("submit")], tmp_path)
    log = _run([_install("wrong.cpp"), _out("submit"), _install("fast.cpp"), _out("submit")],
               tmp_path)
    assert log.status == "success"
    messages = [m.text for m in log.samples[0].messages if m.role == "user"]
    assert any("failed verification" in m and "exceeds tolerance" in m for m in messages)
    score, start = _score(log), _score(start_log)
    assert score.value["success"] == 1 and start.value["success"] == 1
    assert score.value["speedup"] > start.value["speedup"] > 0
    assert score.metadata["scenarios"] and score.metadata["provenance"]["harness_version"]
    # metrics keyed by value name are real numbers, not silently 0
    metrics = {(s.name, m.name): m.value for s in log.results.scores for m in s.metrics.values()}
    assert metrics[("speedup", "gmean")] > 0 and metrics[("success", "rate")] == 1


@pytest.mark.long
def test_crashing_kernel_scores_zero_with_reason_and_log_succeeds(tmp_path):
    log = _run([_install("segfault.cpp"), _out("submit")], tmp_path, attempts=1)
    assert log.status == "success"
    score = _score(log)
    assert score.value == {"success": 0.0, "speedup": 0.0, "speedup_vs_fastest": 0.0,
                           "passed": 0.0, "coverage": 1.0}
    assert "SIGSEGV" in score.explanation
    assert score.metadata["isolation"] == "local"  # the agent and the scorer shared this host


@pytest.mark.long
def test_stop_condition_caches_verification_by_kernel_hash(tmp_path):
    log = _run([_install("wrong.cpp"), _out("submit"), _out("submit"), _out("submit")],
               tmp_path)
    events = [e.data["stop_condition"] for e in log.samples[0].events
              if e.event == "info" and isinstance(e.data, dict) and "stop_condition" in e.data]
    assert [e["attempt"] for e in events] == [1, 2, 3]
    assert len({e["kernel_sha256"] for e in events}) == 1 and events[-1]["exhausted"]
    store = log.samples[0].store["kernelseek:verifications"]
    assert len(store) == 1  # verified once, reused twice


@pytest.mark.parametrize(("change", "text"), [
    ({"suite": "huge"}, "suite='huge'"),
    ({"upstream": "cudnn"}, "upstream='cudnn'"),
    ({"attempts": 0}, "attempts must be a positive integer"),
    ({"sandbox": "vm"}, "sandbox='vm'"),
])
def test_task_arguments_are_validated(change, text):
    with pytest.raises(TaskArgumentError, match=text):
        kernel_task(TaskSettings(**{**SMOKE, **change}), version=1, root=ROOT)


def test_fa3_task_builds_with_docker_sandbox_and_prompt():
    task = kernel_task(TaskSettings(target="fa3_hopper", upstream="fa3"), version=1, root=ROOT)
    sample = task.dataset[0]
    assert "kernel.cu" in sample.files and "flash_forward_kvcache" in sample.input
    assert task.sandbox.type == "docker" and task.sandbox.config.endswith("hopper/compose.yaml")
    assert task.version == 1 and task.metadata["settings"]["score_suite"] == "full"


@pytest.mark.long
@pytest.mark.parametrize("solver", ["kernelseek", "evals/kernelseek", "kernel_agent",
                                    "evals/kernelseek_bank"])
def test_cli_resolves_solver_names(tmp_path, solver):
    # every solver is registered by the same mechanism: bare from the task file, evals/ from
    # the package entry point; these four runs cover both forms for three arms. The CLI is
    # the documented offline-safe wrapper (python -m, so this checkout's evals is imported).
    proc = subprocess.run(
        [sys.executable, "-m", "evals.inspect_cli", "eval", "tasks/cpu_attention",
         "--solver", solver, "--model", "mockllm/model", "-T", "suite=smoke",
         "-T", "score_suite=smoke", "--log-dir", str(tmp_path), "--display", "plain"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [log_file] = tmp_path.glob("*.eval")
    arm = solver.split("/")[-1]
    assert f"-{arm.replace('_', '-')}_" in log_file.name
    log = read_eval_log(str(log_file))
    assert f"arm:{arm}" in log.eval.tags
    metrics = {(s.name, m) for s in log.results.scores for m in s.metrics}
    assert {("speedup", "gmean"), ("success", "rate_lo")} <= metrics


def test_every_task_file_starts_its_target():
    # fa4_blackwell refused to start until its target existed; every task now builds
    from evals.bench.config.targets import TARGETS

    for name, descriptor in TARGETS.items():
        assert descriptor.unavailable is None, name
        task = kernel_task(TaskSettings(target=name, upstream=descriptor.upstream), root=ROOT)
        assert task.dataset[0].id == name


def test_registered_names_cover_every_arm():
    from evals.bench.arms import ARMS

    assert set(ARMS) == {"kernel_agent", "kernelseek", "kernelseek_bank", "kernelseek_model",
                            "scripted", "open_ended", "autonomous"}
    # every task file registers the bare names through the same call
    for task_file in ROOT.glob("tasks/*/*.py"):
        assert "register_unqualified(__name__)" in task_file.read_text()


@pytest.mark.parametrize("task_dir", ["tasks/fa3_hopper", "tasks/cpu_attention"])
def test_every_arm_resolves_bare_and_qualified_on_every_task(tmp_path, monkeypatch, task_dir):
    # run_samples=False resolves the task and solver (as `inspect eval --solver NAME` does)
    # without running a sample, so the GPU task needs no GPU here
    from inspect_ai.solver import SolverSpec

    from evals.bench.arms import ARMS

    monkeypatch.chdir(ROOT)  # Inspect loads task files by relative path
    for name in sorted(ARMS):
        for form in (name, f"evals/{name}"):
            [log] = inspect_eval(task_dir, solver=SolverSpec(form),
                                 model="mockllm/model", task_args={"sandbox": "local"},
                                 run_samples=False, display="none", log_dir=str(tmp_path))
            assert log.eval.solver == form
    with pytest.raises(ValueError, match="Unknown solver"):
        inspect_eval(task_dir, solver=SolverSpec("no_such_arm"),
                     model="mockllm/model", task_args={"sandbox": "local"}, run_samples=False,
                     display="none", log_dir=str(tmp_path))


@pytest.mark.parametrize("name", ["evals/fa3_hopper", "evals/cpu_attention"])
def test_tasks_resolve_from_the_entry_point(tmp_path, name):
    from inspect_ai.solver import SolverSpec

    [log] = inspect_eval(name, solver=SolverSpec("evals/kernel_agent"), model="mockllm/model",
                         task_args={"sandbox": "local", "suite": "smoke"}, run_samples=False,
                         display="none", log_dir=str(tmp_path))
    assert log.eval.task == name and log.eval.task_args["suite"] == "smoke"


def test_container_sandboxes_need_a_checkout(tmp_path, monkeypatch):
    # an installed wheel has no sandboxes/: docker and k8s need KERNELSEEK_ROOT, local nothing
    from evals.bench.config.sandboxes import sandbox_spec

    settings = TaskSettings(target="fa3_hopper", upstream="fa3")
    compose = str(ROOT / "sandboxes/hopper/compose.yaml")
    assert sandbox_spec(settings, root=ROOT) == ("docker", compose)
    with pytest.raises(TaskArgumentError, match="KERNELSEEK_ROOT"):
        sandbox_spec(settings, root=tmp_path)
    monkeypatch.setenv("KERNELSEEK_ROOT", str(ROOT))
    k8s = TaskSettings(target="fa3_hopper", upstream="fa3", sandbox="k8s")
    assert sandbox_spec(k8s) == ("k8s", str(ROOT / "sandboxes/k8s/values-hopper.yaml"))
    assert sandbox_spec(TaskSettings(**{**SMOKE, "sandbox": "local"}), root=tmp_path) == "local"
