"""The leaderboard: ``results/leaderboard/README.md`` (tables) and PNG plots, from the dataset."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evals.results.dataset import load
from evals.results.plots import category_heatmap, speedup_plot
from evals.results.summary import (
    STUDY_RATIO,
    ArmSummary,
    compare,
    pairs,
    publication_refusal,
    spread,
    study_epochs,
    summarise_arm,
)
from evals.stats import BOOTSTRAP_MIN_RUNS, Interval, epochs_needed

EFFECTS = (1.05, 1.1, 1.25, 1.5, 2.0, STUDY_RATIO)


PERMUTATION_RULE = (
    "p: exact two-sided permutation test on log speedups (every split of the pooled successful "
    "runs into groups of the two arms' sizes; p is the share whose absolute difference of mean "
    "logs is at least the observed one; Monte Carlo above 20000 splits). With unequal arms this "
    "|difference| rule can be half scipy's default two-sided p (twice the smaller one-sided p)."
)
NOT_ISOLATED = "(!)"
ISOLATION_NOTE = (
    f"{NOT_ISOLATED} Not scored in a container: `local` runs shared a user and a host with the "
    "scorer (`-T sandbox=local`), so a hostile agent could have changed its own score; "
    "`unknown` runs come from logs that did not record their isolation. Not tamper-proof: "
    "`--publish` refuses them."
)
INTERVALS = (
    "Intervals (95%): Wilson for the success rate; for the geomean a Student t interval on the "
    "log speedups of successful runs (from 2 runs; a BCa bootstrap from "
    f"{BOOTSTRAP_MIN_RUNS}), for a ratio "
    "Welch's t on the difference of mean logs; a dash and the reason where there is none "
    "(fewer than 2 successful runs, or every run alike)."
)


def _x(v: float | None, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _pair(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "-" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _ci(ci: Interval | None) -> str:
    if ci is None:
        return "-"
    if ci.bounds is None:
        return f"- ({ci.reason})"
    return f"{_pair(ci.bounds)} {ci.method}"


def _isolation(a: ArmSummary) -> str:
    """The arm's kept runs by isolation: ``container``, else each kind counted and marked."""
    if a.isolated:
        return "container" if a.isolation else "-"
    return ", ".join(f"{k} {n}" for k, n in a.isolation.items()) + f" {NOT_ISOLATED}"


def _arm_table(arms: list[ArmSummary]) -> list[str]:
    lines = [
        "| arm | runs | left out (harness error) | success | 95% Wilson | "
        "geomean speedup (successes) | 95% interval | fast_1.0 | fast_1.1 | upstream coverage | "
        "isolation |",
        "| --- | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for a in arms:
        lines.append(
            f"| {a.arm} | {a.runs} | {a.excluded} | {a.successes}/{a.runs} | "
            f"{_pair(a.success_ci, 2)} | {_x(a.geomean)} | {_ci(a.geomean_ci)} | "
            f"{a.fast_1_0:.2f} | {a.fast_1_1:.2f} | {_x(a.coverage, 2)} | {_isolation(a)} |"
        )
    excluded = sum(a.excluded for a in arms)
    lines += [
        "",
        f"Runs left out: {excluded} (a harness or environment fault, not the agent's; "
        "`outcome = harness_error` in the dataset, counted per arm above).",
    ]
    if not all(a.isolated for a in arms):
        lines += ["", ISOLATION_NOTE]
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
        "Pairwise (successful runs): ratio of geomeans a/b with its 95% interval; "
        f"{PERMUTATION_RULE} "
        f"Holm-adjusted over the {len(rows)} pair(s). Smallest p: the least p the exact test can "
        "give at these arm sizes (raw / Holm-adjusted); a p-value cannot go below it whatever "
        "the gap. Epochs needed: runs per arm at which the simulated power of this same test "
        "(Holm factor included) reaches 0.8 for the observed ratio at the pooled spread.",
        "",
        "| a | b | ratio a/b | 95% interval | p | p (Holm) | smallest p (raw / Holm) | "
        "epochs needed |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for c in rows:
        lines.append(
            f"| {c.a} | {c.b} | {_x(c.ratio)} | {_ci(c.ratio_ci)} | {_x(c.p_value)} | "
            f"{_x(c.p_holm)} | {c.min_p:.3f} / {c.min_p_holm:.3f} | {c.epochs_needed or '-'} |"
        )
    return lines


def _power_table(arms: list[ArmSummary]) -> list[str]:
    found, m = spread(arms), max(1, pairs(arms))
    if not math.isfinite(found.sd):
        return ["", "Power: needs at least one arm with two successful runs."]
    sds = [("at the pooled sd", found.sd)]
    if found.interval:
        sds.append(("at the sd's upper 95% bound", found.interval[1]))
    heads = " | ".join(f"{r:.2f}x" for r in EFFECTS)
    rows = [
        f"| epochs per arm {label} ({sd:.3f}) | "
        + " | ".join(str(epochs_needed(r, sd, comparisons=m) or "-") for r in EFFECTS)
        + " |"
        for label, sd in sds
    ]
    study = study_epochs(arms)
    return [
        "",
        f"Power: epochs per arm (equal arms) at which the exact two-sided permutation test above "
        f"reaches power 0.8 at alpha 0.05 / {m} (Holm's first step over the {m} pair(s) here), "
        "by simulation (normal log speedups, 2000 data sets; the t-test's size above 40 per "
        "arm). The spread is itself uncertain: pooled sd of log speedups of successful runs "
        f"{found.sd:.3f} on {found.dof} degree(s) of freedom, 95% interval "
        f"{_pair(found.interval)}; the second row sizes for its upper end. The last column is "
        f"the KERNELSEEK study's reported gap, 1.13x vs 0.5x: {study or '-'} epochs per arm at "
        "the pooled sd (the study ran one of each).",
        "",
        f"| ratio of geomeans | {heads} |",
        "| --- |" + " ---: |" * len(EFFECTS),
        *rows,
    ]


def _group_section(task: str, model: str, runs: Any, out: Path, *, dry_run: str) -> list[str]:
    arms = [summarise_arm(str(a), g) for a, g in runs.groupby("arm", sort=True)]
    stem = f"{task}__{model.replace('/', '_')}" + ("__dry_run" if dry_run else "")
    speedup_plot(arms, out / f"{stem}__speedup.png", title=f"{task} / {model}")
    heat = category_heatmap(arms, out / f"{stem}__categories.png", title=f"{task} / {model}")
    version = ", ".join(str(v) for v in sorted(runs["task_version"].unique()))
    heading = f"## {task} (version {version}) / {model}" + (f": {dry_run}" if dry_run else "")
    lines = [heading, "", *_arm_table(arms)]
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


def render(dataset: Path, out: Path, *, note: str | None = None, publish: bool = False) -> Path:
    """Write ``out/README.md`` and the plots from the dataset in ``dataset``.

    Runs not scored in a container are marked (an ``isolation`` column and a footnote). With
    ``publish``, such runs are refused instead, writing nothing.

    Raises:
        ValueError: ``publish`` and a run that counts was not scored in a container (one line,
            :func:`evals.results.summary.publication_refusal`).
    """
    runs, reference = load(dataset)
    refusal = publication_refusal(runs) if publish else None
    if refusal:
        raise ValueError(refusal)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# KernelSeek Bench leaderboard",
        "",
        f"Rendered from `{dataset}` by `python -m evals.results leaderboard`; do not edit by "
        "hand. Success (every scenario correct) and speed are reported separately: the "
        "geomean speedup is over successful runs only. Runs that failed for the harness's or "
        "the environment's reasons are left out of every statistic and counted.",
        "",
        INTERVALS,
        "",
    ]
    if note:
        lines += [f"> {note}", ""]
    noted = runs.get("dry_run")  # absent from datasets built before version 3
    dry = "" if noted is None else noted.astype(object).where(noted.notna(), "")
    for (task, model, note), group in runs.assign(note=dry).groupby(
        ["task", "model", "note"], sort=True
    ):
        lines += _group_section(str(task), str(model), group, out, dry_run=str(note))
    lines += _reference_section(reference)
    path = out / "README.md"
    path.write_text("\n".join(lines))
    return path
