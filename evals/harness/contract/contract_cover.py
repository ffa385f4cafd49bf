"""A pairwise covering set over a contract's classes, seeded from the run's seed.

Random draws reach an edge class by chance (a single query row at head dim 128 in about 1% of
smoke scores); a covering set reaches every pair by design: for any two dimensions of the
machine-readable contract (:mod:`evals.harness.contract.contract_spec`) and any class of each, at
least one row pins both. The greedy construction (AETG-like: each row starts from an uncovered pair
and adds, dimension by dimension, the class covering most uncovered pairs) is deterministic given
its random stream, which breaks ties and orders the dimensions: a run's seed varies the rows and
their concrete values while every class pair stays guaranteed. Excluded pairs (two classes no input
can show together) are neither required nor ever placed in one row.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence

from evals.harness.contract.contract_spec import ContractSpec

Pair = frozenset[tuple[str, str]]
Row = dict[str, str]


def class_pairs(classes: Mapping[str, Sequence[str]], excluded: frozenset[Pair]) -> set[Pair]:
    """Every pair of classes of two different dimensions, less the excluded ones."""
    pairs: set[Pair] = set()
    for a, b in itertools.combinations(classes, 2):
        for ca, cb in itertools.product(classes[a], classes[b]):
            pair = frozenset({(a, ca), (b, cb)})
            if pair not in excluded:
                pairs.add(pair)
    return pairs


def uncovered(
    rows: Sequence[Row], classes: Mapping[str, Sequence[str]], excluded: frozenset[Pair]
) -> set[Pair]:
    """The required pairs no row of ``rows`` shows."""
    shown = set().union(*(_pairs_of(row) for row in rows))
    return class_pairs(classes, excluded) - shown


CANDIDATES = 12
"""Candidate rows built per row kept (the one covering most pairs wins): fewer rows."""


def covering_rows(spec: ContractSpec, rng: random.Random) -> list[Row]:
    """Rows (dimension to class) covering every allowed class pair of ``spec``'s dimensions.

    No row's size (:meth:`ContractSpec.row_size`) passes ``spec.size_cap`` unless the pair it
    was built for does alone: a large class still meets every class of every other dimension,
    in rows whose other dimensions are small.
    """
    classes = {d.name: list(d.classes) for d in spec.dims}
    left = class_pairs(classes, spec.excluded)
    rows: list[Row] = []
    while left:
        todo = sorted(left, key=sorted)
        best: tuple[int, Row] | None = None
        for _ in range(CANDIDATES):
            row = _candidate(rng.choice(todo), spec, classes, left, rng)
            gain = len(left & _pairs_of(row))
            if best is None or gain > best[0]:
                best = (gain, row)
        assert best is not None
        left -= _pairs_of(best[1])
        rows.append(best[1])
    return rows


def _pairs_of(row: Row) -> set[Pair]:
    """The class pairs one row shows."""
    return {frozenset(p) for p in itertools.combinations(row.items(), 2)}


def _candidate(
    start: Pair,
    spec: ContractSpec,
    classes: Mapping[str, Sequence[str]],
    left: set[Pair],
    rng: random.Random,
) -> Row:
    """A row from the uncovered pair ``start``, the other dimensions filled greedily."""
    row: Row = dict(start)
    rest = [name for name in classes if name not in row]
    rng.shuffle(rest)
    for name in rest:
        row[name] = _best_class(name, classes[name], row, left, spec, rng)
    return row


def _best_class(
    name: str,
    options: Sequence[str],
    row: Row,
    left: set[Pair],
    spec: ContractSpec,
    rng: random.Random,
) -> str:
    """The class of ``name`` covering most pairs still ``left`` with the row so far.

    Only classes that keep the row within ``spec.size_cap`` (the dimensions not yet filled
    at their smallest) are weighed; where none does, the smallest.
    """
    allowed = [
        option
        for option in options
        if not any(frozenset({(name, option), item}) in spec.excluded for item in row.items())
    ]
    if not allowed:
        raise ValueError(f"contract: no class of {name!r} fits beside {row}")
    fits = [o for o in allowed if spec.row_size({**row, name: o}) <= spec.size_cap]
    if not fits:
        return min(allowed, key=lambda o: spec.row_size({**row, name: o}))
    best: list[str] = []
    most = -1
    for option in fits:
        gain = sum(frozenset({(name, option), item}) in left for item in row.items())
        if gain > most:
            best, most = [option], gain
        elif gain == most:
            best.append(option)
    return rng.choice(best)
