"""A target's contract in machine-readable form: its open dimensions, their ranges and classes.

The prose contract (``kernels/<target>/CONTRACT.md``) holds one fenced ``toml`` block, its
section "Ranges", the single source of truth for every dimension the contract leaves open::

    format = "kernelseek.contract/1"
    [limits]                  # stated limits on the whole input (bytes, aliasing, ...)
    [dims.<name>]             # one open dimension
    range = [lo, hi]          # numeric: the legal range (``inf`` where only a limit bounds it)
    values = [...]            # or categorical: every legal value
    draw = "<quantity>"       # the draw.json quantity its random draws come from, if any
    via = "..."               # or: how its random draws reach it (a derived quantity)
    relative_to = "<dim>"     # classes are relations to another dimension (see RELATIONS)
    classes.<class> = {kind = values}   # boundary and interior classes, as draw specs
    [[exclude]]               # class pairs no input can show, e.g. {seqlen_q = "below",
                              # seqlen_k = "one"}
    [cover]                   # optional: what a covering row may cost
    size = ["<dim>", ...]     # a row's size: the product of these dimensions' largest values
    size_cap = N              # no row over it unless the pair it was built for is (then the
                              # rest of the row takes its smallest classes)

Each class is a draw spec of :data:`evals.harness.targets.draw_space.KINDS` (``int``, ``uniform``,
``choice``) over the dimension's quantity; a run's covering set pins one class per dimension
(:mod:`evals.harness.contract.contract_cover`).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTRACT_FORMAT = "kernelseek.contract/1"
RELATIONS = frozenset({"one", "below", "equal", "above"})
"""Classes of a length relative to another (see ``DrawSpace.pinned_layout``)."""
_BLOCK = re.compile(r"^```toml\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Dim:
    """One open dimension of the contract.

    Attributes:
        name: The dimension, also the quantity a covering row pins.
        classes: Class name to its draw spec (``{kind: values}``), in contract order.
        range: ``(lo, hi)`` of a numeric dimension (``math.inf`` unbounded), else None.
        values: Every legal value of a categorical dimension, else None.
        draw: The draw.json quantity its random draws come from ("" where none does).
        via: How its random draws reach it when no quantity is its own.
        relative_to: The dimension its classes are relations to (:data:`RELATIONS`), or "".
    """

    name: str
    classes: Mapping[str, Mapping[str, Any]]
    range: tuple[float, float] | None = None
    values: tuple[Any, ...] | None = None
    draw: str = ""
    via: str = ""
    relative_to: str = ""


@dataclass(frozen=True)
class ContractSpec:
    """A target's machine-readable contract.

    Attributes:
        dims: The open dimensions, in contract order.
        limits: Stated limits on the whole input (e.g. ``input_bytes``, bytes).
        excluded: Class pairs no input shows, each ``((dim, class), (dim, class))``.
        size: The dimensions whose largest values multiply to a covering row's size.
        size_cap: The largest size a covering row may have (``math.inf``: no cap).
    """

    dims: tuple[Dim, ...]
    limits: Mapping[str, Any]
    excluded: frozenset[frozenset[tuple[str, str]]]
    size: tuple[str, ...] = ()
    size_cap: float = math.inf

    def dim(self, name: str) -> Dim:
        """The dimension ``name``."""
        return next(d for d in self.dims if d.name == name)

    def top(self, name: str, cls: str, row: Mapping[str, str]) -> float:
        """The largest value class ``cls`` of ``name`` gives, in a row pinning ``row``.

        A relation class (:data:`RELATIONS`) is sized by the dimension it relates to, the
        class ``row`` gives that one (its largest class where the row has none yet): ``one``
        is 1, ``above`` up to 8 more.
        """
        dim = self.dim(name)
        if not dim.relative_to:
            return float(max(spec_bounds(dim.classes[cls])))
        if cls == "one":
            return 1.0
        other = self.dim(dim.relative_to)
        tops = [self.top(other.name, c, row) for c in other.classes]
        base = self.top(other.name, row[other.name], row) if other.name in row else max(tops)
        return base + (8.0 if cls == "above" else 0.0)

    def row_size(self, row: Mapping[str, str]) -> float:
        """A (partial) row's size (the product of the ``size`` dimensions' largest values).

        A dimension the row has no class for yet counts at its smallest class's.
        """
        total = 1.0
        for name in self.size:
            if name in row:
                total *= self.top(name, row[name], row)
            else:
                total *= min(self.top(name, c, row) for c in self.dim(name).classes)
        return total


def parse_contract(text: str, where: str = "contract") -> ContractSpec:
    """The contract of a CONTRACT.md's fenced ``toml`` block.

    Raises:
        ValueError: No block, another format, or a malformed dimension.
    """
    match = _BLOCK.search(text)
    if match is None:
        raise ValueError(f"{where}: no fenced toml block")
    doc = tomllib.loads(match.group(1))
    if doc.get("format") != CONTRACT_FORMAT:
        raise ValueError(f"{where}: expected format {CONTRACT_FORMAT!r}")
    dims = tuple(_dim(name, spec, where) for name, spec in doc.get("dims", {}).items())
    excluded = frozenset(frozenset(pair.items()) for pair in doc.get("exclude", []))
    if any(len(p) != 2 for p in excluded):
        raise ValueError(f"{where}: every exclude names two dimensions' classes")
    cover = doc.get("cover", {})
    size = tuple(str(name) for name in cover.get("size", ()))
    if not {name for name in size} <= {d.name for d in dims}:
        raise ValueError(f"{where}: cover.size names a dimension the contract does not have")
    cap = float(cover.get("size_cap", math.inf))
    return ContractSpec(dims, doc.get("limits", {}), excluded, size, cap)


def _dim(name: str, spec: Mapping[str, Any], where: str) -> Dim:
    """The dimension ``name`` of the block's ``[dims.<name>]`` table ``spec``."""
    classes = spec.get("classes", {})
    if not classes or any(len(c) != 1 for c in classes.values()):
        raise ValueError(f"{where}: dimension {name!r} needs classes, one draw spec each")
    if ("range" in spec) == ("values" in spec):
        raise ValueError(f"{where}: dimension {name!r} needs a range or values, not both")
    lo_hi = spec.get("range")
    return Dim(
        name=name,
        classes=dict(classes),
        range=(float(lo_hi[0]), float(lo_hi[1])) if lo_hi is not None else None,
        values=tuple(spec["values"]) if "values" in spec else None,
        draw=str(spec.get("draw", "")),
        via=str(spec.get("via", "")),
        relative_to=str(spec.get("relative_to", "")),
    )


def load_contract(path: Path) -> ContractSpec:
    """The machine-readable contract in the CONTRACT.md at ``path``."""
    return parse_contract(path.read_text(), str(path))


def spec_bounds(spec: Mapping[str, Any]) -> tuple[float, float] | tuple[Any, ...]:
    """``(lo, hi)`` of a numeric draw spec, else the tuple of values it can give."""
    kind, values = next(iter(spec.items()))
    if kind in ("int", "uniform"):
        return float(values[0]), float(values[1])
    values = tuple(values)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return float(min(values)), float(max(values))
    return values


def inside(dim: Dim, spec: Mapping[str, Any]) -> bool:
    """Whether every value ``spec`` can give is legal for ``dim``."""
    kind, values = next(iter(spec.items()))
    if dim.relative_to:
        return kind == "choice" and set(values) <= RELATIONS
    if dim.values is not None:
        return kind in ("choice", "cycle") and set(values) <= set(dim.values)
    assert dim.range is not None
    lo, hi = spec_bounds(spec)
    return dim.range[0] <= lo and hi <= dim.range[1] and not math.isnan(lo)
