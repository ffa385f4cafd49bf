"""The leaderboard: ``results/leaderboard/README.md`` (tables) and PNG plots, from the dataset."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evals.results.dataset import load
from evals.results.plots import category_heatmap, speedup_plot
from evals.results.summary import STUDY_RATIO, ArmSummary, compare, study_epochs, summarise_arm
from evals.stats import epochs_needed

EFFECTS = (1.05, 1.1, 1.25, 1.5, 2.0, STUDY_RATIO)


def _x(v: float | None, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "-" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _arm_table(arms: list[ArmSummary]) -> list[str]:
    lines = [
        "| arm | runs | success | 95% Wilson | geomean speedup (successes) | 95% BCa | "
        "fast_1.0 | fast_1.1 | upstream coverage |",
        "| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for a in arms:
        lines.append(
            f"| {a.arm} | {a.runs} | {a.successes}/{a.runs} | {_ci(a.success_ci, 2)} | "
            f"{_x(a.geomean)} | {_ci(a.geomean_ci)} | {a.fast_1_0:.2f} | {a.fast_1_1:.2f} | "
            f"{_x(a.coverage, 2)} |"
        )
    return lines


def _category_table(arms: list[ArmSummary]) -> list[str]:
    cats = sorted({c for a in arms for c in a.categories})
    if not cats:
        return []
    lines = ["| arm | " + " | ".join(cats) + " |", "| --- |" + " ---: |" * len(cats)]
    lines += [
        f"| {a.arm} | " + " | ".join(_x(a.categories.get(c)) for c in cats) + " |" for a in arms
    ]
    return ["", "Per-category geomean speedup (successful runs):", "", *lines]


def _comparison_table(arms: list[ArmSummary]) -> list[str]:
    rows = compare(arms)
    if not rows:
        return []
    lines = [
        "",
        "Pairwise (successful runs): ratio of geomeans a/b with a 95% BCa interval, exact "
        "two-sided permutation test on log speedups, Holm-adjusted over the pairs, and the "
        "epochs per arm a z-test would need to detect the observed ratio (alpha 0.05, power 0.8).",
        "",
        "| a | b | ratio a/b | 95% BCa | p | p (Holm) | epochs needed (z) |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for c in rows:
        lines.append(
            f"| {c.a} | {c.b} | {_x(c.ratio)} | {_ci(c.ratio_ci)} | {_x(c.p_value)} | "
            f"{_x(c.p_holm)} | {c.epochs_needed or '-'} |"
        )
    return lines


def _power_table(arms: list[ArmSummary]) -> list[str]:
    sd, study = study_epochs(arms)
    if not math.isfinite(sd):
        return ["", "Power: needs at least one arm with two successful runs."]
    cells = " | ".join(str(epochs_needed(r, sd) or "-") for r in EFFECTS)
    heads = " | ".join(f"{r:.2f}x" for r in EFFECTS)
    return [
        "",
        f"Power: epochs per arm to tell two arms apart (two-sided, alpha 0.05, power 0.8) at the "
        f"observed spread of log speedups of successful runs (pooled sd {sd:.3f}), never fewer "
        "than the exact permutation test needs to reach 0.05 (4 per arm). The last column is "
        f"the KERNELSEEK study's reported gap, 1.13x vs 0.5x: {study} epochs per arm at this "
        "spread (the study ran one of each).",
        "",
        f"| ratio of geomeans | {heads} |",
        "| --- |" + " ---: |" * len(EFFECTS),
        f"| epochs per arm | {cells} |",
    ]


def _group_section(task: str, model: str, runs: Any, out: Path) -> list[str]:
    arms = [summarise_arm(str(a), g) for a, g in runs.groupby("arm", sort=True)]
    stem = f"{task}__{model.replace('/', '_')}"
    speedup_plot(arms, out / f"{stem}__speedup.png", title=f"{task} / {model}")
    heat = category_heatmap(arms, out / f"{stem}__categories.png", title=f"{task} / {model}")
    version = ", ".join(str(v) for v in sorted(runs["task_version"].unique()))
    lines = [f"## {task} (version {version}) / {model}", "", *_arm_table(arms)]
    lines += _category_table(arms) + _comparison_table(arms) + _power_table(arms)
    lines += ["", f"![speedups]({stem}__speedup.png)"]
    if heat:
        lines.append(f"![categories]({stem}__categories.png)")
    return [*lines, ""]


def _reference_section(reference: Any) -> list[str]:
    if reference.empty:
        return []
    lines = [
        "## Reference figures (reported elsewhere; not measured here, not comparable)",
        "",
        "| source | arm | geomean speedup | configurations | runs | note |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in reference.itertuples():
        lines.append(
            f"| {r.source} | {r.arm} | {r.geomean_speedup} | {r.configurations} | {r.runs} | "
            f"{r.note} |"
        )
    return [*lines, ""]


def render(dataset: Path, out: Path, *, note: str | None = None) -> Path:
    """Write ``out/README.md`` and the plots from the dataset in ``dataset``."""
    runs, reference = load(dataset)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# KernelSeek Bench leaderboard",
        "",
        f"Rendered from `{dataset}` by `python -m evals.results leaderboard`; do not edit by "
        "hand. Success (every scenario correct) and speed are reported separately: the "
        "geomean speedup is over successful runs only.",
        "",
    ]
    if note:
        lines += [f"> {note}", ""]
    for (task, model), group in runs.groupby(["task", "model"], sort=True):
        lines += _group_section(str(task), str(model), group, out)
    lines += _reference_section(reference)
    path = out / "README.md"
    path.write_text("\n".join(lines))
    return path
