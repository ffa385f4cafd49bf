"""The open-ended arm's archive: correct kernels found so far, with their fitness."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Archive", "Entry"]


@dataclass
class Entry:
    """One kernel of the archive."""

    id: str
    parent: str | None
    geomean: float
    by_category: dict[str, float]
    children: int = 0


@dataclass
class Archive:
    """Correct kernels found so far, with their fitness."""

    entries: list[Entry] = field(default_factory=list)

    def elites(self) -> set[str]:
        """Ids of the best entry per scenario category (never crowded out)."""
        best: dict[str, tuple[float, str]] = {}
        for e in self.entries:
            for cat, s in e.by_category.items():
                if s > best.get(cat, (0.0, ""))[0]:
                    best[cat] = (s, e.id)
        return {i for _, i in best.values()}

    def sample(self, rng: random.Random, diversity: float) -> Entry:
        """Fitness-proportional choice; fewer children and elite status add weight."""
        elites = self.elites()
        weights = [
            1e-9 + e.geomean * (1 + diversity / (1 + e.children)) * (1.5 if e.id in elites else 1)
            for e in self.entries
        ]
        return rng.choices(self.entries, weights=weights, k=1)[0]

    def best(self) -> Entry:
        """The entry with the highest geomean."""
        return max(self.entries, key=lambda e: e.geomean)
