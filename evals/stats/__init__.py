"""Statistics of repeated runs: intervals for one arm, comparisons between arms, power.

Pure numpy (no Inspect): used by the scorer's metrics, the results dataset and the leaderboard.
"""

from evals.stats.compare import (
    epochs_needed,
    holm,
    permutation_floor,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
)
from evals.stats.intervals import (
    bca_interval,
    fast_p,
    geomean,
    geomean_ci,
    successes,
    wilson,
)

__all__ = [
    "bca_interval",
    "epochs_needed",
    "fast_p",
    "geomean",
    "geomean_ci",
    "holm",
    "permutation_floor",
    "permutation_test",
    "pooled_sd_log",
    "ratio_ci",
    "successes",
    "wilson",
]
