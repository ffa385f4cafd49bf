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


def _room(module: str, modules: dict[str, Path]) -> str | None:
    """The sub-package of ``evals.harness`` that ``module`` is or lives in (None: neither)."""
    parts = module.split(".")
    if parts[:2] != ["evals", "harness"] or len(parts) < 3:
        return None
    is_package = modules[module].name == "__init__.py"
    return parts[2] if len(parts) > 3 or is_package else None


def harness_back_edges() -> list[str]:
    """Imports between the harness's sub-packages that go against their declared order."""
    from evals.harness import LAYOUT

    modules = _modules()
    rank = {room: i for i, room in enumerate(LAYOUT)}
    found = []
    for name, path in sorted(modules.items()):
        room = _room(name, modules)
        for other in sorted(_imports(path, modules)):
            to = _room(other, modules)
            if room is None or to is None or to == room:
                continue
            if rank.get(to, len(rank)) >= rank.get(room, -1):
                found.append(f"{name} -> {other}")
    return found


def test_the_harness_rooms_are_declared_and_import_only_the_ones_before_them():
    from evals.harness import LAYOUT

    rooms = {p.parent.name for p in (ROOT / "evals" / "harness").glob("*/__init__.py")}
    assert sorted(LAYOUT) == sorted(rooms)
    assert harness_back_edges() == []


def test_the_order_check_sees_an_import_against_the_order(tmp_path, monkeypatch):
    pkg = tmp_path / "evals" / "harness"
    for room in ("low", "high"):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
    (tmp_path / "evals" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from evals.harness.high.b import B\n")
    (pkg / "low" / "c.py").write_text("from evals.harness.high import B\n")  # the package's own
    (pkg / "high" / "b.py").write_text("B = 1\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    monkeypatch.setattr("evals.harness.LAYOUT", ("low", "high"))
    assert harness_back_edges() == [
        "evals.harness.low.a -> evals.harness.high.b",
        "evals.harness.low.c -> evals.harness.high",
    ]
