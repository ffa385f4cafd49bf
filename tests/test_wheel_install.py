"""The package works installed from a wheel (``pip install .``, not editable), outside a checkout.

The wheel is built from a copy of the checkout (so the build leaves nothing in it) and installed
into a fresh virtual environment that reaches this one's site-packages for its dependencies
only (a ``.pth`` line: the editable install's finder there is not loaded), so ``evals`` can
come from the wheel alone. From a folder outside the checkout it then finds every packaged file
(bank, contracts, start kernels, recipes, notes, task files) and runs one arm end to end:
``evals/kernelseek_bank`` on ``evals/cpu_attention`` with mockllm, offline, through the
documented wrapper.
"""

import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from email.parser import Parser
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log
from packaging.requirements import Requirement
from packaging.version import Version

from tests.helpers import ROOT

# Left out of the copy: not needed to build, or large.
SKIP = {".git", ".venv", ".cache", ".scratch", ".whl", "results", "tests", "build", "logs",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
# What the installed package must find through importlib.resources, printed as JSON.
PROBE = """
import json, evals
from evals.bench import TARGETS, bench_target
from evals.bank import DEFAULT_BANK_PATH, load_bank
from evals.bench.questioning.decisions import load_phrases
from evals.bench.agent.recipe import load_recipe
files = {"bank": str(DEFAULT_BANK_PATH)}
for name, t in TARGETS.items():
    files[name + "/task"] = str(t.task_file())
    if t.unavailable is None:
        files[name + "/contract"] = str(t.contract())
        files[name + "/start"] = str(t.start())
        files[name + "/recipe"] = str(t.recipe())
        files[name + "/context"] = str(next(t.context().iterdir()))
        assert load_recipe(t.recipe()).target == name
assert load_bank().questions and load_phrases()
print(json.dumps({"evals": evals.__file__, "files": files}))
"""


OLDEST_TESTED_TORCH = "2.11.0"  # the H200 hosts' CUDA build


def _pinned(name):
    """The version constraints.txt pins for ``name`` (what the scripts install and test)."""
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        req = line.split("#")[0].strip()
        if req.startswith(f"{name}=="):
            return Version(req.split("==")[1])
    raise AssertionError(f"constraints.txt pins no {name}")


def _torch_requirement(requirements):
    [torch] = [r for r in map(Requirement, requirements) if r.name == "torch"]
    return torch


def test_a_user_install_gets_a_tested_torch():
    # `pip install '.[inspect]'` resolves torch from pyproject's range, not constraints.txt:
    # the range must hold the pinned (tested) torch and the H200's, and no later minor release
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = _torch_requirement(declared).specifier
    pinned = _pinned("torch")
    assert pinned in spec and Version(OLDEST_TESTED_TORCH) in spec
    assert Version(f"{pinned.major}.{pinned.minor + 1}.0") not in spec


def _run(argv, cwd, env, timeout=600):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{argv}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _check_wheel_torch(wheel):
    """The wheel's metadata carries pyproject's torch range, the one a user's pip resolves."""
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        [name] = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(zf.read(name).decode())
    torch = _torch_requirement(r for r in meta.get_all("Requires-Dist") if "extra" not in r)
    assert _pinned("torch") in torch.specifier


def _install(tmp_path, env):
    """Build the wheel from a copy of the checkout; install it into a fresh venv."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=lambda d, names: SKIP & set(names))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "-q", "-w", str(tmp_path / "dist"), str(source)], tmp_path, env)
    [wheel] = (tmp_path / "dist").glob("kernelseek_bench-*.whl")
    _check_wheel_torch(wheel)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = str(venv / "bin" / "python")
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   tmp_path, env).strip()
    # dependencies (and pip) from this environment, after the venv's own site-packages
    Path(purelib, "kernelseek-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
          str(wheel)], tmp_path, env)
    return python, Path(purelib)


@pytest.mark.long
def test_the_wheel_runs_an_arm_end_to_end_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KERNELSEEK_ROOT", "VIRTUAL_ENV")}
    python, purelib = _install(tmp_path, env)
    work = tmp_path / "elsewhere"
    work.mkdir()

    found = json.loads(_run([python, "-P", "-c", PROBE], work, env))
    assert Path(found["evals"]).is_relative_to(purelib)
    for name, path in found["files"].items():
        assert Path(path).is_relative_to(purelib), name
        assert Path(path).is_file() and not Path(path).is_symlink(), name

    _run([python, "-m", "evals.inspect_cli", "eval", "evals/cpu_attention",
          "--solver", "evals/kernelseek_bank", "--model", "mockllm/model",
          "-T", "suite=smoke", "-T", "score_suite=smoke", "--log-dir", str(work / "logs"),
          "--display", "plain"], work, env)
    [log_file] = (work / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.eval.task == "evals/cpu_attention"
    [sample] = log.samples
    solver = [e.data for e in sample.events
              if e.event == "info" and isinstance(e.data, dict) and "solver_settings" in e.data]
    assert solver[0]["solver"] == "kernelseek_bank"
    score = sample.scores["kernel_speedup"]
    assert score.value["success"] == 1, score.explanation  # the packaged start kernel, scored
