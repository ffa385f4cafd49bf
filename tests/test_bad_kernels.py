"""Every bad-input case gives a one-line reason, the right code and a non-zero exit."""

import json

import pytest

from evals.harness import Code, RunSettings, evaluate
from tests.helpers import CPU_KERNELS, run_harness

CASES = [
    ("wrong.cpp", Code.INACCURATE, "exceeds tolerance"),
    ("nan.cpp", Code.NAN_INF, "NaN or Inf"),
    ("unwritten.cpp", Code.UNWRITTEN_OUTPUT, "never written"),
    ("missing_entry.cpp", Code.MISSING_ENTRY_POINT, "kernelseek::attention_forward"),
    ("wrong_signature.cpp", Code.WRONG_SIGNATURE, "wrong signature"),
    ("wrong_shape.cpp", Code.WRONG_SHAPE, "expected (1, 128, 4, 64)"),
    ("wrong_dtype.cpp", Code.WRONG_DTYPE, "float64"),
    ("throws.cpp", Code.EXCEPTION, "deliberate failure in the candidate"),
    ("segfault.cpp", Code.CRASH, "SIGSEGV"),
    ("runaway_alloc.cpp", Code.EXCEPTION, "alloc"),
]


@pytest.mark.parametrize(("kernel", "code", "text"), CASES, ids=[c[0] for c in CASES])
def test_bad_kernel_is_rejected_with_reason(kernel, code, text):
    verdict = evaluate(RunSettings("check", "cpu_attention", CPU_KERNELS / kernel, suite="smoke"))
    assert verdict.status == "failed"
    # every scenario fails with the same code: a crash costs one scenario, the worker restarts
    assert [r.failure.code for r in verdict.results] == [code] * len(verdict.results)
    reason = verdict.results[0].failure.reason
    assert text in reason and "\n" not in reason


def test_scenario_filter_and_unknown_scenario():
    settings = RunSettings("check", "cpu_attention", CPU_KERNELS / "throws.cpp", suite="smoke",
                           scenario_ids=("smoke-fp32-d64-s128-h4-full",))
    assert [r.scenario.id for r in evaluate(settings).results] == ["smoke-fp32-d64-s128-h4-full"]
    bad = RunSettings("check", "cpu_attention", CPU_KERNELS / "throws.cpp", suite="smoke",
                      scenario_ids=("nope",))
    assert evaluate(bad).failure.code == Code.BAD_ARGUMENT


def test_hang_is_killed_after_the_timeout():
    settings = RunSettings("check", "cpu_attention", CPU_KERNELS / "hang.cpp", suite="smoke",
                           call_timeout_s=3)
    verdict = evaluate(settings)
    assert [r.failure.code for r in verdict.results] == [Code.TIMEOUT] * 2
    assert "no answer within 3 s" in verdict.results[0].failure.reason


def test_build_error_exits_1_with_reason_in_output_and_json(tmp_path):
    out = tmp_path / "v.json"
    proc = run_harness("check", "--target", "cpu_attention", "--kernel",
                       str(CPU_KERNELS / "build_error.cpp"), "--suite", "smoke", "--json", str(out))
    assert proc.returncode == 1
    assert "build_error" in proc.stdout and "undeclared_function" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and doc["failure"]["code"] == "build_error"
    assert doc["aggregates"]["passed"] == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--target", "nope", "--kernel", "kernels/cpu_attention/start.cpp"], "unknown_target"),
        (["--target", "cpu_attention", "--kernel", "missing.cpp"], "missing_file"),
        (["--target", "cpu_attention", "--kernel", "kernels/cpu_attention/start.cpp",
          "--suite", "huge"], "unknown_suite"),
        (["--target", "cpu_attention", "--kernel", "pyproject.toml"], "bad_argument"),
    ],
)
def test_bad_invocations_exit_2_with_one_line_reason(tmp_path, args, code):
    out = tmp_path / "v.json"
    proc = run_harness("check", *args, "--json", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1
    doc = json.loads(out.read_text())
    assert doc["status"] == "error" and doc["failure"]["code"] == code
