import dataclasses
import shutil

from evals.harness import Code, get_target
from evals.harness.building.build import build, build_key, trim_log
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


def test_a_broken_build_environment_is_not_cached_as_a_compiler_error(tmp_path, monkeypatch):
    # the build child cannot even start (as on a host where it could not import the harness):
    # the environment's fault, reported as such and never replayed once the environment is fixed
    import sys

    target = get_target("cpu_attention")
    source = tmp_path / "fine.cpp"
    source.write_text(START_CPU.read_text() + "\n// unique: environment test\n")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'evals'\"\nexit 1\n")
    fake.chmod(0o755)
    with monkeypatch.context() as m:
        m.setattr(sys, "executable", str(fake))
        broken = build(target, source, cache_dir=tmp_path / "cache")
    assert broken.failure.code == Code.HARNESS_ERROR
    assert "build environment" in broken.failure.reason and "evals" in broken.failure.reason
    assert not list((tmp_path / "cache").glob("*/result.json"))
    fixed = build(target, source, cache_dir=tmp_path / "cache")
    assert fixed.failure is None and not fixed.cached and fixed.library.is_file()


def test_the_build_key_names_the_toolchain():
    from evals.harness.building.build import toolchain

    found = toolchain(False)
    assert found["c++"] and "/" in found["c++"]  # a path and its version line


def test_a_build_from_another_environment_is_not_reused(monkeypatch, tmp_path):
    # issue 41: a cache shared by two virtual environments served one's library (and a log
    # naming its include paths) to the other
    import sys

    target, source = get_target("cpu_attention"), START_CPU.read_bytes()
    here = build_key(target, source)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "other-venv"))
    assert build_key(target, source) != here


def test_the_default_cache_is_the_checkouts_own_unless_named(monkeypatch, tmp_path):
    # two checkouts of one user must never share a build: without $KERNELSEEK_CACHE the
    # cache lives in this checkout (git-ignored .cache/), never in ~/.cache
    from pathlib import Path

    from evals.harness.building.cache_dir import default_cache_dir

    checkout = Path(__file__).resolve().parents[1]
    monkeypatch.delenv("KERNELSEEK_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == checkout / ".cache" / "kernelseek" / "builds"
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "named"))
    assert default_cache_dir() == tmp_path / "named" / "builds"
