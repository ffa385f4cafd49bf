"""The open-ended arm: evolutionary search over kernels with an archive in the sandbox.

Each step samples a parent from the archive (fitness with a diversity bonus for parents with
few children; the best kernel per scenario category is always kept), asks the model for a
mutated kernel, benches it with the harness, and keeps it if every scenario is correct.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from evals.bench import budget
from evals.bench.agent import log_settings, sample_seed
from evals.bench.budget import budgeted_harness
from evals.bench.harness_exec import RESULTS_DIR
from evals.bench.settings import TaskSettings

ARCHIVE = f"{RESULTS_DIR}/archive"
_CODE_BLOCK = re.compile(r"```(?:[a-zA-Z+]*)\n(.*?)```", re.DOTALL)

MUTATE = """You improve a {lang} attention kernel. Below is the current kernel and how it did
on the benchmark. Reply with ONE complete, improved kernel file in a single fenced code block;
keep the contract (in the task description) exactly."""


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


def _fitness(verdict: dict[str, Any] | None, upstream: str) -> tuple[float, dict[str, float]]:
    """Geomean vs the upstream and per-category geomeans; 0 unless every scenario is correct."""
    if verdict is None or not verdict["aggregates"]["all_correct"]:
        return 0.0, {}
    cats: dict[str, list[float]] = {}
    for s in verdict["scenarios"]:
        speed = (s.get("speedup") or {}).get(upstream)
        if speed:
            cats.setdefault(s["params"].get("category") or s["id"].split("-")[0], []).append(speed)
    by_cat = {c: float(sum(v) / len(v)) for c, v in cats.items()}
    return float(verdict["aggregates"]["geomean_speedup"].get(upstream) or 0.0), by_cat


async def _evaluate(settings: TaskSettings, source: str) -> tuple[float, dict[str, float], str]:
    """Bench ``source`` as the workspace kernel (one evaluation of the budget)."""
    await sandbox().write_file(settings.kernel_file, source)
    run = await budgeted_harness(
        settings, "bench", suite=settings.suite, timeout=settings.check_timeout
    )
    geo, cats = _fitness(run.verdict, settings.upstream)
    return geo, cats, run.table[-3000:]


async def _store(entry: Entry, source: str, archive: Archive) -> None:
    await sandbox().write_file(f"{ARCHIVE}/{entry.id}{_suffix(source)}", source)
    await sandbox().write_file(
        f"{ARCHIVE}/archive.json", json.dumps([asdict(e) for e in archive.entries], indent=1)
    )


def _suffix(source: str) -> str:
    return ".cu" if "__global__" in source else ".cpp"


@solver
def open_ended(*, diversity: float = 1.0) -> Solver:
    """Evolutionary search under the task's budget (like every arm).

    Each step is 2 agent messages (the mutation prompt and the reply), the reply's tokens and
    one evaluation (the bench of the child); the search ends when any is spent
    (``-T evaluations``, ``-T message_limit``, ``-T token_limit``, ``-T time_limit``).

    Args:
        diversity: Weight of the bonus for parents with few children.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = TaskSettings.from_json(state.metadata["settings"])
        seed = sample_seed(state)
        log_settings(
            "open_ended",
            settings,
            {"diversity": diversity, "seed": seed},
        )
        rng, model, archive = random.Random(seed), get_model(), Archive()
        budget.start(settings)
        sources: dict[str, str] = {}
        start = await sandbox().read_file(settings.kernel_file)
        geo, cats, table = await _evaluate(settings, start)
        archive.entries.append(Entry("k0", None, geo, cats))
        sources["k0"], tables = start, {"k0": table}
        await _store(archive.entries[0], start, archive)
        lang = "CUDA" if settings.kernel_file.endswith(".cu") else "C++"
        step = 0
        while (reason := budget.exhausted(evaluations=True)) is None:
            step += 1
            parent = archive.sample(rng, diversity)
            parent.children += 1
            prompt = (
                f"{state.input_text}\n\nCurrent kernel:\n```\n{sources[parent.id]}\n```\n"
                f"Benchmark:\n{tables[parent.id]}"
            )
            output = await model.generate(
                [
                    ChatMessageSystem(content=MUTATE.format(lang=lang)),
                    ChatMessageUser(content=prompt),
                ]
            )
            budget.spend("agent_tokens", output.usage.total_tokens if output.usage else 0)
            budget.spend("agent_messages", budget.MESSAGES_PER_TURN)
            match = _CODE_BLOCK.search(output.completion)
            child = match.group(1) if match else ""
            geo, cats, table = await _evaluate(settings, child) if child else (0.0, {}, "")
            kept = geo > 0
            if kept:
                entry = Entry(f"k{step}", parent.id, geo, cats)
                archive.entries.append(entry)
                sources[entry.id], tables[entry.id] = child, table
                await _store(entry, child, archive)
            transcript().info(
                {
                    "archive": {
                        "step": step,
                        "parent": parent.id,
                        "kept": kept,
                        "geomean": geo,
                        "size": len(archive.entries),
                        "best": archive.best().id,
                    }
                },
                source="kernelseek",
            )
        budget.note_exhausted(reason)
        best = archive.best()
        await sandbox().write_file(settings.kernel_file, sources[best.id])
        state.output.completion = f"best kernel {best.id}: geomean {best.geomean:.3f}"
        return state

    return solve
