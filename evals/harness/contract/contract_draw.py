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
target's machine-readable contract (:mod:`evals.harness.contract.contract_spec`, the ``toml`` block
of its CONTRACT.md; rows from :mod:`evals.harness.contract.contract_cover`): each row pins one class
per dimension (a draw spec replacing that quantity's range), and the target's own ``draw_contract``
turns it into a scenario (``cover<i>-...``), so every pair of classes of any two dimensions is tried
by every run, with concrete values drawn from the run's seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.harness.contract.contract_cover import covering_rows
from evals.harness.contract.contract_spec import ContractSpec, load_contract
from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.scenarios import Scenario
from evals.harness.targets.draw_space import DRAW_FORMAT, KINDS, DrawSpace
from evals.targets import target_folder

if TYPE_CHECKING:
    from evals.harness.targets.base import Target


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
