"""Leaderboard plots (PNG, matplotlib's Agg backend): speedup distributions and a heat map."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.results.summary import ArmSummary


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def speedup_plot(arms: list[ArmSummary], path: Path, *, title: str) -> None:
    """Per arm: each successful run's speedup (dots), the geomean and its 95% interval."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(arms), 3.6))
    for i, a in enumerate(arms):
        ax.scatter([i] * len(a.speedups), a.speedups, s=18, alpha=0.6, color="tab:blue")
        if a.geomean is not None and a.geomean_ci.bounds is not None:
            lo, hi = a.geomean_ci.bounds
            ax.errorbar(
                [i + 0.15],
                [a.geomean],
                yerr=[[a.geomean - lo], [hi - a.geomean]],
                fmt="D",
                color="black",
                capsize=4,
            )
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(arms)), [f"{a.arm}\n{a.successes}/{a.runs} ok" for a in arms])
    ax.set_ylabel("speedup vs upstream (successful runs)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def category_heatmap(arms: list[ArmSummary], path: Path, *, title: str) -> bool:
    """Arm x category geomean speedups; returns False (and writes nothing) without categories."""
    cats = sorted({c for a in arms for c in a.categories})
    if not cats:
        return False
    plt = _pyplot()
    grid = [[a.categories.get(c) or math.nan for c in cats] for a in arms]
    fig, ax = plt.subplots(figsize=(1.5 + 0.8 * len(cats), 1.2 + 0.5 * len(arms)))
    img = ax.imshow(
        [[math.log2(v) if v == v else math.nan for v in row] for row in grid],
        cmap="RdYlGn",
        vmin=-3,
        vmax=3,
        aspect="auto",
    )
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, "-" if v != v else f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(arms)), [a.arm for a in arms], fontsize=8)
    fig.colorbar(img, ax=ax, label="log2 speedup")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
