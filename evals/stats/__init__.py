"""Statistics of repeated runs: intervals for one arm, comparisons between arms, power.

numpy, scipy and statsmodels (no Inspect): used by the scorer's metrics, the results dataset
and the leaderboard.
"""

from evals.stats.compare import (
    holm,
    holm_floor,
    min_p,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
    sd_interval,
)
from evals.stats.intervals import (
    BOOTSTRAP_MIN_RUNS,
    Interval,
    bootstrap_interval,
    fast_p,
    geomean,
    geomean_ci,
    log_interval,
    successes,
    wilson,
)
from evals.stats.power import epochs_needed, permutation_floor, permutation_power

__all__ = [
    "BOOTSTRAP_MIN_RUNS",
    "Interval",
    "bootstrap_interval",
    "epochs_needed",
    "fast_p",
    "geomean",
    "geomean_ci",
    "holm",
    "holm_floor",
    "log_interval",
    "min_p",
    "permutation_floor",
    "permutation_power",
    "permutation_test",
    "pooled_sd_log",
    "ratio_ci",
    "sd_interval",
    "successes",
    "wilson",
]
