"""The results dataset: measured rows and reference rows as parquet, with a dataset card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals.results.card import write_card
from evals.results.reference import REFERENCE_ROWS
from evals.results.rows import read_rows
from evals.results.summary import publication_refusal

RUNS_FILE = "runs.parquet"
REFERENCE_FILE = "reference.parquet"


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows)
    first = [c for c in ("kind", "task", "task_version", "arm", "model", "epoch") if c in frame]
    return frame[first + [c for c in frame.columns if c not in first]]


def build(logs: list[Path], out: Path, *, note: str | None = None, publish: bool = False) -> int:
    """Read every log under ``logs`` and write the dataset into ``out``; returns the row count.

    Args:
        logs: Log files and folders.
        out: The dataset's folder.
        note: A line at the top of the dataset card.
        publish: Refuse (writing nothing) when a run that counts was not scored in a container
            (:func:`evals.results.summary.publication_refusal`).

    Raises:
        ValueError: No KernelSeek run was found in the logs, or ``publish`` and a run was not
            isolated (one line).
    """
    rows = read_rows(logs)
    if not rows:
        raise ValueError(f"no KernelSeek samples in {', '.join(map(str, logs))}")
    runs = _frame(rows).sort_values(["task", "arm", "model", "epoch"], kind="stable")
    refusal = publication_refusal(runs) if publish else None
    if refusal:
        raise ValueError(refusal)
    out.mkdir(parents=True, exist_ok=True)
    runs.to_parquet(out / RUNS_FILE, index=False)
    _frame(REFERENCE_ROWS).to_parquet(out / REFERENCE_FILE, index=False)
    write_card(out, runs, note=note)
    return len(runs)


def with_outcome(runs: Any) -> Any:
    """Add ``outcome`` / ``outcome_reason`` to rows built before dataset version 2.

    Such rows only say whether the sample errored (``sample_error``) and was scored
    (``scored``): either failing is the harness's fault, as :func:`evals.results.rows.outcome`.
    """
    if "outcome" in runs:
        return runs
    runs = runs.copy()
    bad = runs["sample_error"].notna() | ~runs["scored"].fillna(False).astype(bool)
    runs["outcome"] = ["harness_error" if b else "scored" for b in bad]
    runs["outcome_reason"] = [
        (err if isinstance(err, str) else "no score recorded") if b else None
        for b, err in zip(bad, runs["sample_error"], strict=True)
    ]
    return runs


def with_isolation(runs: Any) -> Any:
    """Add ``isolation`` (``unknown``) to rows built before dataset version 4."""
    return runs if "isolation" in runs else runs.assign(isolation="unknown")


def load(folder: Path) -> tuple[Any, Any]:
    """The measured and the reference table of a dataset folder (pandas DataFrames)."""
    import pandas as pd

    reference = folder / REFERENCE_FILE
    ref = pd.read_parquet(reference) if reference.exists() else pd.DataFrame()
    return with_isolation(with_outcome(pd.read_parquet(folder / RUNS_FILE))), ref
