"""The space one draw is made in: a target's ranges, a covering row's pins, the run's stream.

A target turns one draw into a scenario's parameters
(:meth:`evals.harness.targets.base.Target.draw_contract`) by asking this space for each
quantity; :mod:`evals.harness.contract.contract_draw` makes the spaces of a run (its random draws
and its covering rows) and loads the ranges from ``evals/targets/<target>/suites/draw.json``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.harness.failures import Code, Failure, HarnessInputError

DRAW_FORMAT = "kernelseek.draw/1"
KINDS = ("int", "uniform", "choice", "cycle")
"""How a quantity is drawn: ``int`` ``[lo, hi]`` inclusive, ``uniform`` ``[lo, hi]``,
``choice`` one of a list, ``cycle`` the list in turn over the run's draws from a random start
(so every listed value appears once per that many draws: a class of inputs is never left to
chance)."""


@dataclass
class DrawSpace:
    """The ranges of one target's draw and the run's random stream.

    Attributes:
        ranges: Quantity name to its spec, ``{kind: values}`` (a kind of :data:`KINDS`).
        rng: The run's stream (seeded from the run's seed).
        index: Which draw of the run this is (for ``cycle``).
        pins: A covering row's classes: quantity to the draw spec that replaces its range
            (any kind; a ``cycle`` pin is drawn as a ``choice``).

    """

    ranges: Mapping[str, Mapping[str, Any]]
    rng: random.Random
    index: int = 0
    pins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    _starts: dict[str, int] = field(default_factory=dict)

    def pinned(self, name: str) -> bool:
        """Whether a covering row pins ``name``."""
        return name in self.pins

    def _pin(self, name: str) -> Any:
        kind, values = next(iter(self.pins[name].items()))
        if kind == "int":
            return self.rng.randint(int(values[0]), int(values[1]))
        if kind == "uniform":
            return self.rng.uniform(float(values[0]), float(values[1]))
        return self.rng.choice(list(values))

    def _spec(self, name: str, kind: str) -> Any:
        spec = self.ranges.get(name)
        if spec is None or kind not in spec:
            raise HarnessInputError(
                Failure(Code.BAD_ARGUMENT, f"draw space: {name!r} needs a {kind!r} range")
            )
        return spec[kind]

    def integer(self, name: str) -> int:
        """An integer drawn uniformly from ``name``'s ``int`` range (both ends included)."""
        if self.pinned(name):
            return int(self._pin(name))
        lo, hi = self._spec(name, "int")
        return self.rng.randint(int(lo), int(hi))

    def real(self, name: str) -> float:
        """A float drawn uniformly from ``name``'s ``uniform`` range."""
        if self.pinned(name):
            return float(self._pin(name))
        lo, hi = self._spec(name, "uniform")
        return self.rng.uniform(float(lo), float(hi))

    def choice(self, name: str) -> Any:
        """One of ``name``'s ``choice`` values, uniformly."""
        if self.pinned(name):
            return self._pin(name)
        return self.rng.choice(list(self._spec(name, "choice")))

    def cycle(self, name: str) -> Any:
        """``name``'s ``cycle`` values in turn over the run's draws, from a random start."""
        if self.pinned(name):
            return self._pin(name)
        values = list(self._spec(name, "cycle"))
        if name not in self._starts:
            self._starts[name] = self.rng.randrange(len(values))
        return values[(self._starts[name] + self.index) % len(values)]

    def layout(self, lengths: str = "seqlen") -> tuple[bool, int, int]:
        """``(causal, seqlen_q, seqlen_k)``, the lengths drawn from ``lengths``.

        ``layout`` cycles over ``causal_q_above_k`` (rows that see no key),
        ``causal_q_below_k`` and ``full`` (either order). A covering row pins the mask
        (``causal``), ``seqlen_k`` and ``seqlen_q``'s relation to it instead
        (:meth:`pinned_layout`).
        """
        if self.pinned("seqlen_q"):
            return self.pinned_layout()
        kind = self.cycle("layout")
        sq, sk = sorted((self.integer(lengths), self.integer(lengths)))
        if kind == "causal_q_above_k":
            return True, sk + 1, sq  # strictly above: the first rows see no key
        if kind == "causal_q_below_k" or self.rng.random() < 0.5:
            return kind != "full", sq, sk
        return False, sk, sq

    def pinned_layout(self) -> tuple[bool, int, int]:
        """``(causal, seqlen_q, seqlen_k)`` of a covering row.

        ``seqlen_q``'s class is its relation to ``seqlen_k``: ``one`` (a single query row),
        ``below`` (at least 2, below ``seqlen_k``), ``equal`` or ``above`` (by 1 to 8 rows;
        with a causal mask the first rows see no key).
        """
        causal, sk = bool(self.choice("causal")), self.integer("seqlen_k")
        relation = self.choice("seqlen_q")
        if relation == "one":
            return causal, 1, sk
        if relation == "below":
            return causal, self.rng.randint(min(2, sk - 1), sk - 1), sk
        if relation == "equal":
            return causal, sk, sk
        return causal, sk + self.rng.randint(1, 8), sk

    def magnitudes(self, head_dim: int) -> dict[str, float]:
        """Standard deviations of q, k (``qk_std``) and v (``v_std``) and ``scale``.

        ``qk_log2`` and ``v_log2`` give the magnitudes (powers of two); ``score_log2`` the
        standard deviation of the scaled scores, so the softmax is neither flat nor one-hot
        whatever the magnitudes (tiny values get large scales, large values tiny ones);
        ``scale_sign`` its sign.
        """
        qk_std = 2.0 ** self.real("qk_log2")
        score_std = 2.0 ** self.real("score_log2")
        sign = float(self.cycle("scale_sign"))
        scale = sign * score_std / (qk_std * qk_std * math.sqrt(head_dim))
        return {"qk_std": qk_std, "v_std": 2.0 ** self.real("v_log2"), "scale": scale}
