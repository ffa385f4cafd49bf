"""Choosing the next question: by trigger, by relevance to the run's focus, never repeating."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from evals.bank.schema import Bank, Question, Trigger

# Scenario categories of the fa3_hopper suites (``params.category``, also the first word of
# the scenario id) and the bank tags they call for. ``smoke`` mixes every kind: no focus.
CATEGORY_TAGS: Mapping[str, tuple[str, ...]] = {
    "prefill": ("prefill",),
    "gqa": ("prefill", "gqa"),
    "fp8": ("prefill", "fp8"),
    "varlen": ("prefill", "varlen"),
    "long": ("prefill",),
    "chunk": ("prefill",),
    "decode": ("decode",),
    "ragged": ("decode",),
    "spec": ("decode",),
    "fp8decode": ("decode", "fp8"),
    "smoke": (),
    # integrity II: scenarios of the contract's clauses the grid never tested, of every kind
    "contract": ("prefill", "decode"),
}

# Tags that only make sense on the GPU targets; a question carrying one of them (and not
# ``cpu``) belongs to the GPU, one tagged ``cpu`` to the CPU target.
GPU_TAGS = frozenset({"prefill", "decode", "fp8", "varlen", "gqa"})

# Starts of cpu_attention scenario ids (fa3_hopper ids start with their category).
_CPU_ID_PREFIXES = ("fp32-", "bf16-", "smoke-fp32-")


def _off_target(question: Question, focus: frozenset[str]) -> bool:
    """Whether ``question`` is written for the other target than the one ``focus`` points at.

    Args:
        question: A candidate question.
        focus: The run's focus tags; empty means unknown, so nothing is off target.

    Returns:
        True for a CPU question in a GPU run, or a GPU-only question in a CPU run.

    """
    if not focus:
        return False
    tags = set(question.tags)
    if "cpu" in focus:
        return bool(tags & GPU_TAGS) and "cpu" not in tags
    return "cpu" in tags


def _rank(question: Question, focus: frozenset[str]) -> tuple[int, bool, bool]:
    """Sort key, higher is better: relevance, then ``general``, then on-target.

    Args:
        question: A candidate question.
        focus: The run's focus tags.

    Returns:
        ``(tags in focus, tagged general, not off target)``.

    """
    tags = set(question.tags)
    return (len(tags & focus), "general" in tags, not _off_target(question, focus))


def choose_question(
    bank: Bank,
    *,
    trigger: Trigger,
    focus: Sequence[str] = (),
    asked: Collection[str] = (),
    rng: random.Random,
) -> Question | None:
    """Pick the question to ask at a decision point.

    Candidates are the bank's questions for ``trigger`` whose ids are not in ``asked`` (a
    question is never repeated within a run). They are ranked by relevance, the number of
    their tags in ``focus``; among equally relevant ones, questions tagged ``general`` come
    first, and questions written for the other target (``cpu`` versus the GPU tags) come last.
    Ties at the top are broken with ``rng``, so a seeded run is reproducible.

    Args:
        bank: The question bank.
        trigger: The decision point.
        focus: Bank tags the run should focus on, e.g. from :func:`focus_from_scenarios`.
        asked: Ids of the questions already asked in this run.
        rng: The run's random number generator.

    Returns:
        The chosen question, or None when every question for ``trigger`` has been asked.

    Raises:
        ValueError: ``trigger`` is unknown.

    """
    done = set(asked)
    candidates = [q for q in bank.for_trigger(trigger) if q.id not in done]
    if not candidates:
        return None
    wanted = frozenset(focus)
    best = max(_rank(q, wanted) for q in candidates)
    top = [q for q in candidates if _rank(q, wanted) == best]
    return rng.choice(top)


def _category(scenario: Mapping[str, Any]) -> str | None:
    """The scenario's category: explicit, from its parameters, or from its id.

    A row that has a ``category`` key set to None, or parameters without a category, is a
    cpu_attention scenario (only fa3_hopper scenarios have categories).

    Args:
        scenario: A scenario row: ``{"id", "params"}`` as in suites and verdicts, or any dict
            with ``category`` or ``id``.

    Returns:
        The category, ``"cpu"`` for a cpu_attention scenario, or None when unknown.

    """
    if scenario.get("target") == "cpu_attention":
        return "cpu"
    params = scenario.get("params")
    for category in (
        scenario.get("category"),
        params.get("category") if isinstance(params, Mapping) else None,
    ):
        if isinstance(category, str):
            return category
    if "category" in scenario or isinstance(params, Mapping):
        return "cpu"
    sid = scenario.get("id")
    if not isinstance(sid, str):
        return None
    if sid.startswith(_CPU_ID_PREFIXES):
        return "cpu"
    first = sid.split("-", 1)[0]
    return first if first in CATEGORY_TAGS else None


def focus_from_scenarios(worst: Sequence[Mapping[str, Any]]) -> list[str]:
    """Bank tags to focus on, from the scenarios where the candidate does worst.

    fa3_hopper categories map to GPU tags (``ragged``, ``spec`` -> decode; ``fp8decode`` ->
    decode, fp8; ``chunk``, ``long`` -> prefill; ``gqa`` -> prefill, gqa; ``smoke`` -> none);
    cpu_attention scenarios (ids like ``fp32-d64-s128-...``, no category) map to ``cpu``.
    Unknown categories are ignored.

    Args:
        worst: Scenario rows, worst first: dicts with ``category``, ``params`` (whose
            ``category`` is read) or just ``id`` (whose first word is the category). A row
            whose ``category`` is None, or whose ``params`` have none, is a cpu_attention one.

    Returns:
        The tags, without duplicates, in order of first appearance.

    """
    tags: list[str] = []
    for scenario in worst:
        category = _category(scenario)
        if category is None:
            continue
        mapped = ("cpu",) if category == "cpu" else CATEGORY_TAGS.get(category, ())
        tags.extend(t for t in mapped if t not in tags)
    return tags
