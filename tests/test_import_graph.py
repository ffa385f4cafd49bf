"""Issue 42: no import circle in ``evals``, type-only and deferred imports included.

A circle makes the order in which modules can be read (and loaded) a matter of luck, and hides
which way the dependency runs; the four the issue found went through ``TYPE_CHECKING`` blocks
and imports inside functions, so those count here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT


def _modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "evals").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ``evals`` modules ``path`` imports anywhere in its text, each as a module name."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                names.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n in modules}


def import_circles() -> list[list[str]]:
    """Every set of ``evals`` modules that import one another in a circle (Tarjan)."""
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(part) > 1:
                circles.append(sorted(part))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return circles


def test_no_module_of_evals_imports_itself_through_others():
    assert import_circles() == []


def test_the_check_sees_a_circle_through_a_type_only_import(tmp_path, monkeypatch):
    # the check itself: two modules of a copy, one importing the other only for its types
    pkg = tmp_path / "evals"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from evals.b import B\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evals.a import A\n"
    )
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert import_circles() == [["evals.a", "evals.b"]]
