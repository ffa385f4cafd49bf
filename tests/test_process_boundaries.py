"""What runs in which process is told by the layout.

``evals/harness/worker/`` is the worker program (the candidate's worker shares its process
with the candidate's code); nothing outside it but the entry point that starts it imports
anything of it (what both ends share is :mod:`evals.harness.worker_link.protocol`). What the
program loads from other rooms is named in ``evals.harness.worker.SHARED``, and the build
child loads nothing that judges or times.
"""

import ast
import subprocess
import sys

from tests.helpers import ROOT

WORKER = "evals.harness.worker"
ENTRY = ROOT / "evals" / "worker_entry.py"  # starts the program: confines, then imports it


def _imported(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            yield node.module, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [alias.name]


def test_no_module_outside_the_worker_program_imports_it():
    offenders = []
    for path in sorted((ROOT / "evals").rglob("*.py")):
        if WORKER.replace(".", "/") in path.as_posix() or path == ENTRY:
            continue
        for module, names in _imported(path):
            inside = [n for n in [module, *names] if n == WORKER or n.startswith(f"{WORKER}.")]
            if inside:
                offenders.append(f"{path.relative_to(ROOT)}: {module}")
    assert offenders == []


def test_the_parent_loads_no_worker_module_when_it_judges():
    code = (
        "import sys, evals.harness.pipeline.runner, evals.harness.pipeline.cli\n"
        "import evals.harness.clock_checks.wall_check\n"
        f"print(sorted(m for m in sys.modules if m.startswith({WORKER + '.'!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _loaded_by(module):
    code = (
        f"import sys, {module}\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('evals.harness.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return {m for m in out.stdout.split() if m != WORKER and not m.startswith(f"{WORKER}.")}


def test_the_worker_program_loads_exactly_the_modules_its_map_names():
    from evals.harness.worker import SHARED

    packages = {m.rsplit(".", 1)[0] for m in SHARED}
    assert _loaded_by(f"{WORKER}.serve") - packages == set(SHARED)


def test_the_build_child_loads_no_module_that_judges_or_times():
    loaded = _loaded_by("evals.harness.building.build_child")
    assert loaded - {"evals.harness.building", "evals.harness.sandbox"} == {
        "evals.harness.building.build_child",
        "evals.harness.building.build_protocol",
        "evals.harness.sandbox.confine",
        "evals.harness.sandbox.memory_walls",
        "evals.harness.sandbox.os_sandbox",
    }


def test_every_sub_package_says_which_process_runs_it():
    for init in sorted((ROOT / "evals" / "harness").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert any(w in doc for w in ("parent", "worker", "child")), init
