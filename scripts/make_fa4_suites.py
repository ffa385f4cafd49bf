"""Write the fa4_blackwell suites, derived from fa3_hopper's.

The KERNELSEEK study's Blackwell kernel was measured over 124 scenarios of the Hopper study's
grid with no fp8 and no head dimension of 192 or above (its kernel had neither). So each
fa4_blackwell suite is the fa3_hopper suite of the same name less every scenario whose dtype is
fp8 or whose head_dim is 192 or more, contract scenarios included; ids and parameters are kept,
so a scenario means the same on both targets. The contract-scenario draw space loses fp8 and
the head dims >= 192 likewise. Run from the repository root after changing fa3_hopper's suites:
    python scripts/make_fa4_suites.py
"""

from __future__ import annotations

import json
from pathlib import Path

SOURCE = Path("evals/targets/fa3_hopper/suites")
OUT = Path("evals/targets/fa4_blackwell/suites")
MAX_HEAD_DIM = 128
DTYPES = ("bfloat16",)


def kept(params: dict) -> bool:
    """A scenario of the study's Blackwell space: bf16 and head_dim at most 128."""
    return params["dtype"] in DTYPES and params["head_dim"] <= MAX_HEAD_DIM


def derive_suite(name: str) -> dict:
    """fa3_hopper's suite ``name`` less fp8 and head dims above 128."""
    doc = json.loads((SOURCE / f"{name}.json").read_text())
    scenarios = [s for s in doc["scenarios"] if kept(s["params"])]
    return {**doc, "target": "fa4_blackwell", "scenarios": scenarios}


def derive_draw() -> dict:
    """fa3_hopper's draw space with only bf16 and head dims up to 128."""
    doc = json.loads((SOURCE / "draw.json").read_text())
    space = dict(doc["space"])
    space["dtype"] = {"choice": list(DTYPES)}
    space["head_dim"] = {"choice": [d for d in space["head_dim"]["choice"] if d <= MAX_HEAD_DIM]}
    about = (
        "Contract scenarios each run draws from its seed "
        "(evals/harness/contract/contract_draw.py). fa3_hopper's space (see its draw.json) less "
        "fp8 and head dims above 128, as "
        "kernels/fa4_blackwell/CONTRACT.md allows; written by scripts/make_fa4_suites.py."
    )
    return {**doc, "target": "fa4_blackwell", "about": about, "space": space}


def main() -> None:
    """Write smoke, dev, full and draw, and print each suite's size."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ("smoke", "dev", "full"):
        doc = derive_suite(name)
        (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        study = sum(1 for s in doc["scenarios"] if not s.get("contract"))
        print(f"{name}: {len(doc['scenarios'])} scenarios ({study} study-shaped)")
    (OUT / "draw.json").write_text(json.dumps(derive_draw(), indent=1) + "\n")


if __name__ == "__main__":
    main()
