"""What runs in the candidate's process lives apart: the parent imports only its protocol.

``evals/harness/worker/`` is the worker program (the candidate's worker shares its process
with the candidate's code); nothing outside it but the entry point that starts it imports
anything of it beyond :mod:`evals.harness.worker.protocol`.
"""

import ast
import subprocess
import sys

from tests.helpers import ROOT

WORKER = "evals.harness.worker"
ALLOWED = {f"{WORKER}.protocol"}
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


def test_no_module_outside_the_worker_program_imports_it_but_its_protocol():
    offenders = []
    for path in sorted((ROOT / "evals").rglob("*.py")):
        if WORKER.replace(".", "/") in path.as_posix() or path == ENTRY:
            continue
        for module, names in _imported(path):
            inside = [n for n in [module, *names] if n == WORKER or n.startswith(f"{WORKER}.")]
            if inside and not any(n in ALLOWED for n in inside):
                offenders.append(f"{path.relative_to(ROOT)}: {module}")
    assert offenders == []


def test_the_parent_loads_no_worker_module_when_it_judges():
    code = (
        "import sys, evals.harness.runner, evals.harness.cli, evals.harness.wall_check\n"
        f"print(sorted(m for m in sys.modules if m.startswith({WORKER + '.'!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sorted(ALLOWED))
