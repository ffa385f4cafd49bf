"""Contract scenarios drawn at random from a run's seed, over the input space the contract allows.

The suites hold fixed scenarios; a kernel can be right on every one of them and wrong on inputs the
contract allows but no suite lists. So every run also draws a few small scenarios from its seed
(``score``'s is secret): any head count and GQA group, ``seqlen_q`` above and below ``seqlen_k``
(with a causal mask, rows that see no key), softmax scales negative, tiny and large, values up to
the dtype's range. The space is data: ``evals/targets/<target>/suites/draw.json`` says how many
scenarios each suite draws and the range of every quantity; the target turns one draw into a
scenario's parameters (:meth:`evals.harness.targets.base.Target.draw_contract`). Drawn scenarios
are contract scenarios (they gate correctness; their speed is reported apart), and the verdict
records each one's id and parameters like any other scenario's.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.scenarios import Scenario
from evals.targets import target_folder

if TYPE_CHECKING:
    from evals.harness.targets.base import Target

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

    """

    ranges: Mapping[str, Mapping[str, Any]]
    rng: random.Random
    index: int = 0
    _starts: dict[str, int] = field(default_factory=dict)

    def _spec(self, name: str, kind: str) -> Any:
        spec = self.ranges.get(name)
        if spec is None or kind not in spec:
            raise HarnessInputError(
                Failure(Code.BAD_ARGUMENT, f"draw space: {name!r} needs a {kind!r} range")
            )
        return spec[kind]

    def integer(self, name: str) -> int:
        """An integer drawn uniformly from ``name``'s ``int`` range (both ends included)."""
        lo, hi = self._spec(name, "int")
        return self.rng.randint(int(lo), int(hi))

    def real(self, name: str) -> float:
        """A float drawn uniformly from ``name``'s ``uniform`` range."""
        lo, hi = self._spec(name, "uniform")
        return self.rng.uniform(float(lo), float(hi))

    def choice(self, name: str) -> Any:
        """One of ``name``'s ``choice`` values, uniformly."""
        return self.rng.choice(list(self._spec(name, "choice")))

    def cycle(self, name: str) -> Any:
        """``name``'s ``cycle`` values in turn over the run's draws, from a random start."""
        values = list(self._spec(name, "cycle"))
        if name not in self._starts:
            self._starts[name] = self.rng.randrange(len(values))
        return values[(self._starts[name] + self.index) % len(values)]

    def layout(self, lengths: str = "seqlen") -> tuple[bool, int, int]:
        """``(causal, seqlen_q, seqlen_k)``, the lengths drawn from ``lengths``.

        ``layout`` cycles over ``causal_q_above_k`` (rows that see no key),
        ``causal_q_below_k`` and ``full`` (either order).
        """
        kind = self.cycle("layout")
        sq, sk = sorted((self.integer(lengths), self.integer(lengths)))
        if kind == "causal_q_above_k":
            return True, sk + 1, sq  # strictly above: the first rows see no key
        if kind == "causal_q_below_k" or self.rng.random() < 0.5:
            return kind != "full", sq, sk
        return False, sk, sq

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


def draw_path(target: str) -> Path:
    """Where ``target``'s draw space lives (beside its suites)."""
    return target_folder(target).file("suites", "draw.json")


def load_draw(path: Path) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """``(draws per suite, ranges)`` of a draw file.

    Raises:
        HarnessInputError: The file is malformed.

    """
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, f"draw file {path}: {exc}")) from exc
    counts, ranges = doc.get("count"), doc.get("space")
    if doc.get("format") != DRAW_FORMAT or not isinstance(counts, dict):
        reason = f"draw file {path}: expected format {DRAW_FORMAT!r} with count and space"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    if not isinstance(ranges, dict) or any(
        not isinstance(s, dict) or len(s) != 1 or next(iter(s)) not in KINDS
        for s in ranges.values()
    ):
        reason = f"draw file {path}: every range is one of {', '.join(KINDS)}"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    return {str(k): int(v) for k, v in counts.items()}, ranges


def drawn_scenarios(target: Target, suite: str, seed: int) -> tuple[Scenario, ...]:
    """The contract scenarios ``suite`` draws from ``seed`` (none without a draw file).

    Reproducible: the same target, suite and seed give the same scenarios.
    """
    path = draw_path(target.name)
    if not path.is_file():
        return ()
    counts, ranges = load_draw(path)
    rng = random.Random(f"kernelseek-contract-draw:{target.name}:{seed}")
    space = DrawSpace(ranges, rng)
    drawn = []
    for i in range(counts.get(suite, 0)):
        space.index = i
        short, params = target.draw_contract(space)
        drawn.append(Scenario(f"drawn{i}-{short}", params, contract=True, drawn=True))
    return tuple(drawn)
