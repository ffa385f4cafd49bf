"""The study command: its plan, its bad inputs, its tasks and how it runs and resumes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evals.bench.config.targets import TARGETS
from evals.study import StudyPlan, StudyPlanError, run_study, study_tasks
from evals.study import run as study_run
from evals.study.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
START = ROOT / "kernels" / "cpu_attention" / "start.cpp"


def _plan(tmp_path: Path, **changes: object) -> StudyPlan:
    fields: dict[str, object] = {
        "target": "cpu_attention",
        "arms": ("kernel_agent", "kernelseek_bank"),
        "models": ("mockllm/model",),
        "epochs": 3,
        "task_args": TARGETS["cpu_attention"].defaults,
        "log_dir": tmp_path / "logs",
    }
    return StudyPlan(**{**fields, **changes})  # type: ignore[arg-type]


def test_the_plan_counts_runs_device_hours_and_tokens(tmp_path):
    args = dataclasses.replace(TARGETS["cpu_attention"].defaults, evaluations=10)
    plan = _plan(tmp_path, task_args=args, models=("a/b", "c/d"))
    cost = TARGETS["cpu_attention"].folder.cost
    assert cost is not None and plan.runs == 2 * 2 * 3
    # the defaults: evaluations on the dev suite, the score on the full suite
    assert (args.suite, args.score_suite) == ("dev", "full")
    assert plan.device_hours() == pytest.approx(12 * (10 * cost.dev_s + cost.full_s) / 3600)
    assert plan.agent_tokens() == 12 * args.message_limit * plan.tokens_per_message
    limited = _plan(tmp_path, task_args=dataclasses.replace(args, token_limit=1000))
    assert limited.agent_tokens() == 6 * 1000
    text = "\n".join(plan.lines())
    assert "12 runs" in text and "cpu-hours" in text and "assumed 3,000 a message" in text
    assert str(tmp_path / "logs") in text and "resume" in text


def test_every_target_states_what_its_runs_cost():
    for target in TARGETS.values():
        cost = target.folder.cost
        assert cost is not None, target.name
        assert 0 < cost.smoke_s < cost.dev_s < cost.full_s, target.name
        assert "results/measurements" in cost.basis


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"target": "nope"}, "unknown task 'nope'"),
        ({"arms": ("kernel_agent", "nope")}, "unknown arm ['nope']"),
        ({"arms": ()}, "unknown arm"),
        ({"arms": ("kernel_agent", "kernel_agent")}, "named twice"),
        ({"models": ()}, "needs a model"),
        ({"epochs": 0}, "epochs >= 1"),
    ],
)
def test_a_bad_plan_is_one_line(tmp_path, changes, text):
    with pytest.raises(StudyPlanError, match=None) as info:
        _plan(tmp_path, **changes)
    assert text in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["nope", "--arm", "kernel_agent", "--model", "a/b"], "unknown task 'nope'"),
        (["cpu_attention", "--arm", "x", "--model", "a/b"], "unknown arm"),
        (["cpu_attention", "--arm", "kernel_agent", "--model", "a/b", "-T", "suite=zz"], "zz"),
        (["cpu_attention", "--arm", "kernel_agent", "--model", "a/b", "-T", "bogus=1"], "bogus"),
        (["cpu_attention", "--arm", "kernel_agent", "--model", "a/b", "-T", "x"], "NAME=VALUE"),
        (["cpu_attention", "--arm", "kernel_agent", "--replay", "no.cpp"], "no such file"),
        (["cpu_attention", "--arm", "kernel_agent", "--model", "a/b", "--replay", str(START)],
         "no --model"),
        (["cpu_attention", "--arm", "kernel_agent", "--model", "gpt-5"], "names no provider"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys, argv, text):
    assert main([*argv, "--log-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and text in err and "\n" not in err


def test_plan_only_prints_the_plan_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(study_run, "eval_set", lambda **kw: pytest.fail("ran"))
    argv = ["cpu_attention", "--arm", "kernel_agent", "--replay", str(START), "--epochs", "2"]
    assert main([*argv, "--log-dir", str(tmp_path / "l"), "--plan-only"]) == 0
    out = capsys.readouterr().out
    assert "1 arms x 1 models x 2 epochs = 2 runs" in out and "mockllm/model" in out


def test_the_plan_is_sized_from_the_suites_it_runs(tmp_path):
    cost = TARGETS["cpu_attention"].folder.cost
    assert cost is not None
    smoke = dataclasses.replace(TARGETS["cpu_attention"].defaults, evaluations=4, suite="smoke",
                                score_suite="smoke")
    hours = _plan(tmp_path, task_args=smoke, epochs=1, arms=("kernel_agent",)).device_hours()
    assert hours == pytest.approx((4 * cost.smoke_s + cost.smoke_s) / 3600)
    full = dataclasses.replace(smoke, score_suite="full")
    hours_full = _plan(tmp_path, task_args=full, epochs=1, arms=("kernel_agent",)).device_hours()
    assert hours_full == pytest.approx((4 * cost.smoke_s + cost.full_s) / 3600)
    assert hours_full > hours


def test_plan_only_needs_no_provider_package_and_names_the_extra(tmp_path, capsys, monkeypatch):
    import evals.inspect_preflight as preflight_module

    monkeypatch.setattr(preflight_module, "PROVIDER_PACKAGES", {"acme": "no_such_module_xyz"})
    argv = ["cpu_attention", "--arm", "kernel_agent", "--model", "acme/big", "-T", "suite=smoke",
            "--log-dir", str(tmp_path / "l")]
    assert main([*argv, "--plan-only"]) == 0
    out = capsys.readouterr().out
    assert "1 arms x 1 models x 5 epochs = 5 runs" in out
    assert "before it can run here: model 'acme/big' needs the no_such_module_xyz package: " \
        "pip install '.[acme]'" in out
    assert main(argv) == 2  # the study itself cannot run here: one line, nothing started
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "pip install '.[acme]'" in err and "\n" not in err


def test_each_arm_is_a_task_of_the_target_with_that_solver(tmp_path):
    tasks = study_tasks(_plan(tmp_path))
    assert [t.name for t in tasks] == ["cpu_attention", "cpu_attention"]
    assert [t.metadata["study_arm"] for t in tasks] == ["kernel_agent", "kernelseek_bank"]
    assert tasks[0].solver is not tasks[1].solver
    assert all(t.metadata["settings"]["target"] == "cpu_attention" for t in tasks)


def _fake_eval_set(success: bool, calls: list[dict]):
    def fake(**kwargs):
        calls.append(kwargs)
        return success, []

    return fake


def test_an_incomplete_study_builds_nothing_and_says_how_to_resume(tmp_path, monkeypatch):
    calls: list[dict] = []
    monkeypatch.setattr(study_run, "eval_set", _fake_eval_set(False, calls))
    built: list[list[str]] = []
    plan = _plan(tmp_path)
    result = run_study(plan, build=lambda argv: built.append(argv) or 0)
    assert not result.complete and not result.built and built == []
    (call,) = calls
    assert call["log_dir"] == str(plan.log_dir) and call["epochs"] == 3
    assert call["model"] == ["mockllm/model"] and len(call["tasks"]) == 2
    assert call["metadata"]["study"]["arms"] == ["kernel_agent", "kernelseek_bank"]


def test_a_complete_study_builds_the_dataset_then_the_leaderboard(tmp_path, monkeypatch):
    monkeypatch.setattr(study_run, "eval_set", _fake_eval_set(True, []))
    built: list[list[str]] = []
    plan = _plan(tmp_path)
    result = run_study(plan, build=lambda argv: built.append(argv) or 0)
    assert result.complete and result.built
    assert [argv[0] for argv in built] == ["build", "leaderboard"]
    assert built[0][1] == str(plan.log_dir) and built[0][3] == str(result.dataset)
    assert result.dataset.name == "logs-dataset" and result.leaderboard.name == "logs-leaderboard"


def test_a_dataset_that_cannot_be_built_is_not_reported_built(tmp_path, monkeypatch):
    monkeypatch.setattr(study_run, "eval_set", _fake_eval_set(True, []))
    result = run_study(_plan(tmp_path), build=lambda argv: 3)
    assert result.complete and not result.built


@pytest.mark.slow
def test_a_replayed_study_runs_resumes_and_builds_its_results(tmp_path):
    logs = tmp_path / "logs"
    argv = ["cpu_attention", "--arm", "kernel_agent", "--arm", "kernelseek_bank", "--epochs", "1",
            "--replay", str(START), "-T", "suite=smoke", "-T", "score_suite=smoke",
            "--log-dir", str(logs)]
    assert main(argv) == 0
    logs_after_first = sorted(logs.glob("*.eval"))
    assert len(logs_after_first) == 2
    assert main(argv) == 0  # complete: the second run finds every task done
    assert sorted(logs.glob("*.eval")) == logs_after_first
    assert (tmp_path / "logs-leaderboard" / "README.md").is_file()


def test_a_resumed_study_counts_each_run_once(tmp_path):
    from types import SimpleNamespace

    from evals.results.rows import log_paths, superseding

    def log(task_id: str, status: str, created: str) -> SimpleNamespace:
        header = SimpleNamespace(task_id=task_id, created=created)
        return SimpleNamespace(status=status, eval=header)

    killed = log("a", "started", "2026-12-03T00:15")  # its finished samples ran again
    retried = log("a", "success", "2026-12-03T00:19")
    other = log("b", "error", "2026-12-03T00:15")
    assert superseding([killed, other, retried]) == [other, retried]
    for name in ("x.eval", "eval-set.json", "logs.json", "y.json"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in log_paths([tmp_path])] == ["x.eval", "y.json"]


def test_the_plan_says_a_local_sandbox_is_not_isolated(tmp_path):
    local = "\n".join(_plan(tmp_path).lines())  # cpu_attention's default sandbox is local
    assert "isolation local: the agent and the scorer share a user and a host" in local
    boxed = dataclasses.replace(TARGETS["cpu_attention"].defaults, sandbox="docker")
    assert "isolation container\n" in "\n".join(_plan(tmp_path, task_args=boxed).lines()) + "\n"


def test_publish_refuses_a_local_sandbox_before_anything_runs(tmp_path, capsys, monkeypatch):
    with pytest.raises(StudyPlanError, match="--publish needs a container sandbox") as info:
        _plan(tmp_path, publish=True)
    assert "\n" not in str(info.value)
    monkeypatch.setattr(study_run, "eval_set", lambda **kw: pytest.fail("ran"))
    argv = ["cpu_attention", "--arm", "kernel_agent", "--replay", str(START), "--publish"]
    assert main([*argv, "--log-dir", str(tmp_path / "l")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --publish needs a container sandbox") and "\n" not in err


def test_a_study_for_publication_builds_its_results_with_publish(tmp_path, monkeypatch):
    monkeypatch.setattr(study_run, "eval_set", _fake_eval_set(True, []))
    boxed = dataclasses.replace(TARGETS["cpu_attention"].defaults, sandbox="docker")
    built: list[list[str]] = []
    result = run_study(_plan(tmp_path, task_args=boxed, publish=True),
                       build=lambda argv: built.append(argv) or 0)
    assert result.built and [argv[-1] for argv in built] == ["--publish", "--publish"]
    # refused (a run not scored in a container): not built
    refused = run_study(_plan(tmp_path, task_args=boxed, publish=True), build=lambda argv: 2)
    assert refused.complete and not refused.built


def test_the_command_exits_non_zero_when_results_for_publication_were_not_built(
    tmp_path, capsys, monkeypatch
):
    import evals.study.__main__ as study_main

    monkeypatch.setattr(study_main, "device_problem", lambda *a: None)  # no docker engine needed
    monkeypatch.setattr(study_run, "eval_set", _fake_eval_set(True, []))
    argv = ["cpu_attention", "--arm", "kernel_agent", "--replay", str(START), "-T",
            "sandbox=docker", "--log-dir", str(tmp_path / "l")]
    assert main(argv) == 0  # no logs: the dataset is not built, which is no failure here
    assert main([*argv, "--publish"]) == 2  # for publication it is
    assert "the dataset was not built" in capsys.readouterr().out
