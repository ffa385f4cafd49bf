"""Results: Inspect logs -> a tidy parquet dataset -> a leaderboard (tables and plots).

Needs the ``results`` extra (pandas, pyarrow, matplotlib). Commands: ``python -m evals.results``.
"""

from evals.results.dataset import build, load
from evals.results.leaderboard import render
from evals.results.rows import read_rows, sample_row

__all__ = ["build", "load", "read_rows", "render", "sample_row"]
