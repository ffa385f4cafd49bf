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

Beside the random draws, every drawing run adds a pairwise covering set over the classes of the
target's machine-readable contract (:mod:`evals.harness.contract_spec`, the ``toml`` block of
its CONTRACT.md; rows from :mod:`evals.harness.contract_cover`): each row pins one class per
dimension (a draw spec replacing that quantity's range), and the target's own
``draw_contract`` turns it into a scenario (``cover<i>-...``), so every pair of classes of any
two dimensions is tried by every run, with concrete values drawn from the run's seed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.harness.contract_cover import covering_rows
from evals.harness.contract_spec import ContractSpec, load_contract
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


def contract_path(target: str) -> Path:
    """Where ``target``'s prose contract, with its machine-readable block, lives."""
    return target_folder(target).file("kernel", "CONTRACT.md")


def cover_pins(spec: ContractSpec, seed: int, target: str) -> list[dict[str, Any]]:
    """The covering set's rows for ``seed``, each as pins (quantity to its class's spec)."""
    rng = random.Random(f"kernelseek-contract-cover:{target}:{seed}")
    rows = covering_rows(spec, rng)
    return [{name: spec.dim(name).classes[cls] for name, cls in row.items()} for row in rows]


def drawn_scenarios(target: Target, suite: str, seed: int) -> tuple[Scenario, ...]:
    """The contract scenarios ``suite`` draws from ``seed`` (none without a draw file).

    The suite's random draws (``drawn<i>-...``), then, where it draws any, the covering set
    (``cover<i>-...``). Reproducible: the same target, suite and seed give the same scenarios.
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
    if drawn:
        spec = load_contract(contract_path(target.name))
        for i, pins in enumerate(cover_pins(spec, seed, target.name)):
            short, params = target.draw_contract(DrawSpace(ranges, rng, pins=pins))
            row = Scenario(f"cover{i}-{short}", params, contract=True, drawn=True, covering=True)
            drawn.append(row)
    return tuple(drawn)
