"""The dataset card (``README.md`` beside the parquet files): schema, provenance, licence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Bumped when the columns or their meaning change; 2 added outcome / outcome_reason (runs that
# failed for the harness's or the environment's reasons are marked, and left out by the
# leaderboard); 3 added arch / dry_run (a target's run on another architecture than its own,
# such as fa4_blackwell's Hopper dry run, is kept apart from its real measurements); 4 added
# isolation (what separated the agent from the scorer; older rows read back as `unknown`).
DATASET_VERSION = 4
COLUMNS = {
    "kind": "`measured` (this file) or `reference` (reference.parquet: reported elsewhere)",
    "task, task_version, target": "Inspect task, its version (bumped when scores could move)",
    "arm, arm_settings": "solver arm and its resolved settings (JSON), as logged by the arm",
    "task_args": "task arguments as passed (JSON)",
    "model": "agent model",
    "sample_id, epoch, seed": "sample, epoch (1..n) and run seed (`seed_offset` + epoch)",
    "outcome, outcome_reason": "`scored`, or `harness_error` when the harness or the "
    "environment failed (the sample errored, recorded no score, or its verdict failed with "
    "`harness_error` / `device_busy`), with the reason; the leaderboard leaves those out, "
    "counted",
    "isolation": "what separated the agent from the scorer, as the score recorded it: "
    "`container` (a docker or k8s sandbox), `local` (the local sandbox: the agent and the scorer "
    "shared a user and a host, so the score is not tamper-proof) or `unknown` (no score, or a log "
    "older than the record); the leaderboard marks every run not `container`, and `--publish` "
    "refuses them",
    "success": "1 when every scenario of the score suite is correct, else 0",
    "speedup": "geomean speedup vs `upstream` over the scenarios it ran; 0 unless success",
    "speedup_vs_fastest": "geomean vs the fastest upstream per scenario; 0 unless success",
    "passed": "fraction of scenarios correct",
    "coverage": "fraction of the suite's scenarios `upstream` can run",
    "up_<name>_geomean, up_<name>_coverage": "the same for every upstream on the full suite",
    "cat_<category>": "geomean speedup vs `upstream` per scenario category",
    "budget_<name>, limit_<name>": "budget spent and its limit (agent tokens, agent messages, "
    "harness evaluations, working time s; questioner tokens and questions apart)",
    "questions, questions_<source>_<trigger>": "questions injected, by source and trigger",
    "model_tokens, cost_usd": "all model tokens of the sample (agent and questioner); cost "
    "where the provider reports it",
    "wall_time_s, working_time_s, messages": "sample timing (s) and message count",
    "score_suite, score_seed, kernel_sha256": "what was scored: suite, secret seed, kernel hash",
    "harness_version, harness_git_revision, upstream_versions": "harness and upstream versions",
    "torch, cuda, device, gpu_driver, gpu_capability, platform": "provenance of the scoring host",
    "arch, dry_run": "the architecture the kernel was built for, where the target records it; "
    "why the run is not a measurement of the target's own GPU (`dry run on sm_90, not a "
    "Blackwell measurement`), else empty; the leaderboard shows dry runs in their own sections",
    "eval_id, run_id, created, log_status, sample_error, scored, explanation, log_path": (
        "where the row comes from"
    ),
}


def _provenance(runs: Any) -> list[str]:
    def values(col: str) -> str:
        if col not in runs:
            return "-"
        found = sorted({str(v) for v in runs[col].dropna()})
        return ", ".join(found) or "-"

    errors = int((runs["outcome"] == "harness_error").sum()) if "outcome" in runs else 0
    isolation = runs["isolation"].value_counts().sort_index() if "isolation" in runs else {}
    return [
        f"- dataset version: {DATASET_VERSION}",
        f"- rows: {len(runs)} ({runs['log_path'].nunique()} logs; {errors} harness errors)",
        f"- tasks: {values('task')}; task versions: {values('task_version')}",
        f"- arms: {values('arm')}; models: {values('model')}",
        "- isolation: " + (", ".join(f"{k} {n}" for k, n in isolation.items()) or "-"),
        f"- devices: {values('device')}; harness versions: {values('harness_version')}",
        f"- upstream versions: {values('upstream_versions')}",
        f"- runs created: {runs['created'].min()} to {runs['created'].max()}",
    ]


def write_card(out: Path, runs: Any, *, note: str | None) -> None:
    """Write ``out/README.md`` for the dataset in ``out``."""
    lines = [
        "# KernelSeek Bench results dataset",
        "",
        "One row per run of an agent arm on a task: (task, task version, arm, arm settings, "
        "model, epoch/seed). Built from Inspect logs by "
        "`python -m evals.results build LOGDIR... --out DIR`; do not edit by hand.",
        "",
    ]
    if note:
        lines += [f"> {note}", ""]
    lines += [
        "## Files",
        "",
        "- `runs.parquet`: measured runs (`kind = measured`).",
        "- `reference.parquet`: figures reported elsewhere (`kind = reference`), kept apart; "
        "never pool them with measured rows.",
        "",
        "## Loading",
        "",
        "```python",
        "import pandas as pd",
        'runs = pd.read_parquet("results/dataset/runs.parquet")',
        "from datasets import load_dataset  # optional",
        'ds = load_dataset("parquet", data_files="results/dataset/runs.parquet")',
        "```",
        "",
        "## Schema (`runs.parquet`)",
        "",
        "| column | meaning |",
        "| --- | --- |",
        *[f"| {k} | {v} |" for k, v in COLUMNS.items()],
        "",
        "## Provenance",
        "",
        *_provenance(runs),
        "",
        "## Licence",
        "",
        "Apache-2.0, as the repository. Reference rows quote published figures and carry "
        "their source.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))
