"""Results: Inspect logs -> a tidy parquet dataset -> a leaderboard (tables and plots).

Needs the ``results`` extra (pandas, pyarrow, matplotlib, scipy, statsmodels). Commands:
``python -m evals.results``. The names below load on first use, so the command line answers
bad input (and refuses to overwrite shipped data) without importing Inspect or pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "build": "evals.results.dataset",
    "load": "evals.results.dataset",
    "render": "evals.results.leaderboard",
    "read_rows": "evals.results.rows",
    "sample_row": "evals.results.rows",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'evals.results' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
