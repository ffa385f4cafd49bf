import dataclasses
import shutil

from evals.harness import Code, get_target
from evals.harness.build import build, build_key, trim_log
from tests.helpers import CPU_KERNELS, START_CPU


def test_build_is_cached_by_content(tmp_path):
    target = get_target("cpu_attention")
    first = build(target, START_CPU)
    assert first.failure is None and first.library is not None and first.library.is_file()
    again = build(target, START_CPU)
    assert again.cached and again.library == first.library and again.seconds == 0.0
    # same content under another name: same key, same library
    copy = tmp_path / "renamed.cpp"
    shutil.copy(START_CPU, copy)
    assert build(target, copy).library == first.library
    # different content: different key
    copy.write_text(START_CPU.read_text() + "\n// changed\n")
    assert build_key(target, copy.read_bytes()) != first.key


def test_compiler_errors_come_back_trimmed_and_cached():
    target = get_target("cpu_attention")
    result = build(target, CPU_KERNELS / "build_error.cpp")
    assert result.library is None
    assert result.failure.code == Code.BUILD_ERROR
    assert "undeclared_function" in result.failure.reason
    assert "undeclared_function" in result.log
    assert len(result.log.splitlines()) <= 40
    assert build(target, CPU_KERNELS / "build_error.cpp").cached


def test_build_timeout_is_reported_and_not_cached(tmp_path):
    target = get_target("cpu_attention")
    target.build = dataclasses.replace(target.build, timeout_s=0.5)
    source = tmp_path / "slow.cpp"
    source.write_text(START_CPU.read_text() + "\n// unique: timeout test\n")
    result = build(target, source, cache_dir=tmp_path / "cache")
    assert result.failure.code == Code.BUILD_TIMEOUT
    assert "timed out" in result.failure.reason
    assert not result.cached
    assert not list((tmp_path / "cache").glob("*/result.json"))


def test_trim_log_keeps_the_error_region():
    log = "\n".join([f"noise {i}" for i in range(100)] + ["x.cpp:3: error: boom", "context"])
    trimmed = trim_log(log)
    assert trimmed.splitlines()[-2:] == ["x.cpp:3: error: boom", "context"]
    assert "noise 10" not in trimmed
