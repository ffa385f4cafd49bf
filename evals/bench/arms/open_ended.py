"""The ``open_ended`` arm: evolutionary search over kernels with an archive in the sandbox.

Each step samples a parent from the archive (fitness with a diversity bonus for parents with
few children; the best kernel per scenario category is always kept), asks the model for a
mutated kernel, benches it with the harness, and keeps it if every scenario is correct.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, Model, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from evals.bench.arms.archive import Archive, Entry
from evals.bench.arms.common import log_settings, task_settings
from evals.bench.config import budget
from evals.bench.config.budget import budgeted_harness
from evals.bench.config.keywords import keyword_settings
from evals.bench.config.seeds import sample_seed
from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import bench_target
from evals.bench.scoring.harness_exec import RESULTS_DIR
from evals.harness.verdict.record import Verdict

__all__ = ["ARCHIVE", "OpenEndedSettings", "open_ended"]

ARCHIVE = f"{RESULTS_DIR}/archive"
_CODE_BLOCK = re.compile(r"```(?:[a-zA-Z+]*)\n(.*?)```", re.DOTALL)

MUTATE = """You improve a {lang} attention kernel. Below is the current kernel and how it did
on the benchmark. Reply with ONE complete, improved kernel file in a single fenced code block;
keep the contract (in the task description) exactly."""


@dataclass(frozen=True, kw_only=True)
class OpenEndedSettings:
    """Settings of ``open_ended`` (``-S``); its length is the task's budget.

    Attributes:
        diversity: Weight of the bonus for parents with few children.
    """

    diversity: float = 1.0


def _fitness(verdict: Verdict | None, upstream: str) -> tuple[float, dict[str, float]]:
    """Geomean vs the upstream and per-category geomeans; 0 unless every scenario is correct."""
    if verdict is None or not (agg := verdict.aggregates).all_correct:
        return 0.0, {}
    cats: dict[str, list[float]] = {}
    for r in verdict.results:
        speed = r.speedups().get(upstream)
        if speed:
            category = r.scenario.params.get("category") or r.scenario.id.split("-")[0]
            cats.setdefault(category, []).append(speed)
    by_cat = {c: float(sum(v) / len(v)) for c, v in cats.items()}
    return float(agg.geomean_speedup.get(upstream) or 0.0), by_cat


class Search:
    """One run's search: the archive, the kernels' sources and their bench tables."""

    def __init__(self, settings: TaskSettings, arm: OpenEndedSettings, seed: int) -> None:
        self.settings, self.arm = settings, arm
        self.rng, self.archive = random.Random(seed), Archive()
        self.sources: dict[str, str] = {}
        self.tables: dict[str, str] = {}
        self.suffix = PurePosixPath(settings.kernel_file).suffix
        self.system = MUTATE.format(lang=bench_target(settings.target).language)

    async def evaluate(self, source: str) -> tuple[float, dict[str, float], str]:
        """Bench ``source`` as the workspace kernel (one evaluation of the budget)."""
        settings = self.settings
        await sandbox().write_file(settings.kernel_file, source)
        run = await budgeted_harness(
            settings, "bench", suite=settings.suite, timeout=settings.check_timeout
        )
        geo, cats = _fitness(run.verdict, settings.upstream)
        return geo, cats, run.table[-3000:]

    async def keep(self, entry: Entry, source: str, table: str) -> None:
        """Add a correct kernel to the archive, in memory and in the sandbox."""
        self.archive.entries.append(entry)
        self.sources[entry.id], self.tables[entry.id] = source, table
        await sandbox().write_file(f"{ARCHIVE}/{entry.id}{self.suffix}", source)
        entries = [asdict(e) for e in self.archive.entries]
        await sandbox().write_file(f"{ARCHIVE}/archive.json", json.dumps(entries, indent=1))

    async def step(self, number: int, model: Model, task_text: str) -> None:
        """Mutate a sampled parent, bench the child, keep it if correct; log the step."""
        parent = self.archive.sample(self.rng, self.arm.diversity)
        parent.children += 1
        prompt = (
            f"{task_text}\n\nCurrent kernel:\n```\n{self.sources[parent.id]}\n```\n"
            f"Benchmark:\n{self.tables[parent.id]}"
        )
        output = await model.generate(
            [ChatMessageSystem(content=self.system), ChatMessageUser(content=prompt)]
        )
        budget.spend("agent_tokens", output.usage.total_tokens if output.usage else 0)
        budget.spend("agent_messages", budget.MESSAGES_PER_TURN)
        match = _CODE_BLOCK.search(output.completion)
        child = match.group(1) if match else ""
        geo, cats, table = await self.evaluate(child) if child else (0.0, {}, "")
        if geo > 0:
            await self.keep(Entry(f"k{number}", parent.id, geo, cats), child, table)
        transcript().info(
            {
                "archive": {
                    "step": number,
                    "parent": parent.id,
                    "kept": geo > 0,
                    "geomean": geo,
                    "size": len(self.archive.entries),
                    "best": self.archive.best().id,
                }
            },
            source="kernelseek",
        )


@solver
@keyword_settings(OpenEndedSettings())
def open_ended(arm: OpenEndedSettings) -> Solver:
    """Evolutionary search under the task's budget (like every arm).

    Each step is 2 agent messages (the mutation prompt and the reply), the reply's tokens and
    one evaluation (the bench of the child); the search ends when any is spent
    (``-T evaluations``, ``-T message_limit``, ``-T token_limit``, ``-T time_limit``).

    Args:
        arm: Its ``-S`` settings, :class:`OpenEndedSettings`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings, seed = task_settings(state), sample_seed(state)
        log_settings("open_ended", settings, {"diversity": arm.diversity, "seed": seed})
        search, model = Search(settings, arm, seed), get_model()
        budget.start(settings)
        start = await sandbox().read_file(settings.kernel_file)
        geo, cats, table = await search.evaluate(start)
        await search.keep(Entry("k0", None, geo, cats), start, table)
        step = 0
        while (reason := budget.exhausted(evaluations=True)) is None:
            step += 1
            await search.step(step, model, state.input_text)
        budget.note_exhausted(reason)
        best = search.archive.best()
        await sandbox().write_file(settings.kernel_file, search.sources[best.id])
        state.output.completion = f"best kernel {best.id}: geomean {best.geomean:.3f}"
        return state

    return solve
