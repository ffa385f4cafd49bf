"""Figures reported elsewhere, kept apart from measurements (``kind = "reference"``).

They are never mixed with measured rows: they live in their own table
(``reference.parquet``) and the leaderboard prints them in a separate, labelled section.
"""

from __future__ import annotations

from typing import Any

STUDY = "KERNELSEEK study (reported figure, not measured by this benchmark)"
REFERENCE_ROWS: list[dict[str, Any]] = [
    {
        "kind": "reference",
        "source": STUDY,
        "arm": "kernelseek",
        "geomean_speedup": 1.13,
        "configurations": 26,
        "runs": 1,
        "note": "geomean speedup vs FlashAttention-3 on 26 configurations, one run (n = 1)",
    },
    {
        "kind": "reference",
        "source": STUDY,
        "arm": "without questions",
        "geomean_speedup": 0.5,
        "configurations": 26,
        "runs": 1,
        "note": "about 0.5x, the study's comparison run without questions, n = 1",
    },
]
