"""Per kernel, how many audited rounds each round-audit setting would scale and fail.

Usage: python simulate_bounds.py ROUNDS.jsonl...  (rows: kernel, wall_s, null_s, busy_s, calls)
"""

import collections
import json
import sys
from pathlib import Path

SETTINGS = [(0.25, 1.0, 5), (0.25, 0.5, 20), (0.25, 0.25, 20), (0.25, 0.25, 40), (0.3, 0.25, 30)]
"""(tolerance, share of the null round, margin per call in us); (0.25, 0.25, 40) is committed."""


def factor(row: dict, tol: float, share: float, margin_us: float) -> float:
    """evals.harness.round_audit.RoundAudit.factor for one round."""
    bound = (1 + tol) * row["busy_s"] + share * row["null_s"] + row["calls"] * margin_us * 1e-6
    unexplained = row["wall_s"] - row["null_s"] - bound
    return 1.0 if unexplained <= 0 else 1 + unexplained / ((1 + tol) * row["busy_s"])


def main() -> None:
    """Print one line per setting."""
    rows = [json.loads(line) for p in sys.argv[1:] for line in Path(p).read_text().splitlines()]
    for tol, share, margin in SETTINGS:
        per_kernel = collections.defaultdict(list)
        for row in rows:
            per_kernel[row["kernel"]].append(factor(row, tol, share, margin))
        cells = [
            f"{k}: over {sum(f > 1 for f in v)}/{len(v)}, max {max(v):.2f}, "
            f">=1.5 {sum(f >= 1.5 for f in v)}"
            for k, v in per_kernel.items()
        ]
        print(f"tol={tol} share={share} margin={margin}us: " + "; ".join(cells))


if __name__ == "__main__":
    main()
