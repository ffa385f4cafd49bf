"""One tidy row per run: (task, task version, arm, arm settings, model, epoch/seed).

Rows are read with Inspect's public log API (:func:`inspect_ai.log.read_eval_log`);
nothing is parsed from log files by hand. Nested facts (per-category and per-upstream geomeans,
budgets spent, questions by trigger and source) are flattened into prefixed columns:
``cat_<category>``, ``up_<upstream>_geomean`` / ``up_<upstream>_coverage``, ``budget_<name>``
(spent) and ``limit_<name>``, ``questions_<source>_<trigger>``. ``isolation`` is what the score
recorded (:data:`evals.bench.config.settings.Isolation`), ``unknown`` where it recorded none (a log
older than the record, or a sample without a score).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal, cast, get_args

from inspect_ai.log import EvalLog, EvalSample, read_eval_log

from evals.bench.config.settings import Isolation
from evals.harness.failures import Code

SCORER = "kernel_speedup"
SCORE_FIELDS = ("success", "speedup", "speedup_vs_fastest", "passed", "coverage")
# verdict failure codes that are the harness's or the environment's fault, not the candidate's
# (evals.harness.pipeline.runner.NOT_THE_CANDIDATE, not imported: the runner pulls in torch)
HARNESS_FAULTS = frozenset({Code.HARNESS_ERROR.value, Code.DEVICE_BUSY.value})
RowIsolation = Isolation | Literal["unknown"]
"""A row's ``isolation``: the score's, or ``unknown`` where the score recorded none."""
ISOLATED: RowIsolation = "container"
"""The only isolation whose scores may be published (``--publish``)."""


def _info(sample: EvalSample, key: str) -> list[Any]:
    return [
        e.data[key]
        for e in sample.events
        if e.event == "info" and isinstance(e.data, dict) and key in e.data
    ]


def _arm(log: EvalLog, sample: EvalSample) -> tuple[str, dict[str, Any]]:
    """The arm's name and resolved settings (logged by every arm), else the solver name.

    An eval's metadata ``arm`` (``inspect eval --metadata arm=NAME``) overrides the name, so
    variants of one solver (other ``-S`` settings, replayed kernels) are separate arms.
    """
    logged = _info(sample, "solver_settings")
    events = [
        e.data
        for e in sample.events
        if e.event == "info" and isinstance(e.data, dict) and "solver_settings" in e.data
    ]
    label = (log.eval.metadata or {}).get("arm")  # `--metadata arm=NAME` names a variant
    if events and logged:
        return str(label or events[0]["solver"]), dict(logged[0])
    name = (log.eval.solver or "default").split("/")[-1]
    return str(label or name), dict(log.eval.solver_args or {})


def _questions(sample: EvalSample) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for m in sample.messages:
        meta = (m.metadata or {}).get("kernelseek") if m.role == "user" else None
        if isinstance(meta, dict) and meta.get("trigger"):
            counts[f"questions_{meta.get('source')}_{meta['trigger']}"] += 1
    return {"questions": sum(counts.values()), **dict(counts)}


def _usage(sample: EvalSample) -> dict[str, Any]:
    usage = list((sample.model_usage or {}).values())
    costs = [u.total_cost for u in usage if u.total_cost is not None]
    return {
        "model_tokens": sum(u.total_tokens for u in usage),
        "cost_usd": sum(costs) if costs else None,
        "wall_time_s": sample.total_time,
        "working_time_s": sample.working_time,
        "messages": len(sample.messages),
    }


def _score(sample: EvalSample) -> dict[str, Any]:
    score = (sample.scores or {}).get(SCORER)
    if score is None:
        return {"scored": False, "explanation": str(sample.error.message if sample.error else "")}
    value = score.value if isinstance(score.value, dict) else {}
    meta = score.metadata or {}
    prov = meta.get("provenance") or {}
    device = prov.get("device") or {}
    row: dict[str, Any] = {"scored": True, "explanation": score.explanation}
    row |= {f: float(value[f]) if f in value else None for f in SCORE_FIELDS}
    row |= {
        "upstream": meta.get("upstream"),
        "kernel_sha256": meta.get("kernel_sha256"),
        "score_suite": meta.get("suite"),
        "score_seed": meta.get("seed"),
        "harness_version": prov.get("harness_version"),
        "harness_git_revision": prov.get("git_revision"),
        "upstream_versions": json.dumps(prov.get("upstreams") or {}, sort_keys=True),
        "torch": prov.get("torch"),
        "cuda": prov.get("cuda"),
        "device": device.get("name") or prov.get("cpu"),
        "gpu_driver": device.get("driver"),
        "gpu_capability": device.get("capability"),
        "arch": device.get("arch"),
        "dry_run": device.get("note"),
        "platform": prov.get("platform"),
    }
    row |= {f"cat_{c}": g for c, g in (meta.get("categories") or {}).items()}
    for name, up in (meta.get("upstreams") or {}).items():
        row |= {f"up_{name}_geomean": up.get("geomean"), f"up_{name}_coverage": up.get("coverage")}
    budget = meta.get("budget") or {}
    row |= {f"budget_{k}": v for k, v in (budget.get("spent") or {}).items()}
    row |= {f"limit_{k}": v for k, v in (budget.get("limits") or {}).items()}
    return row


def isolation(sample: EvalSample) -> RowIsolation:
    """The ``isolation`` the sample's score recorded; ``unknown`` without one (older logs)."""
    score = (sample.scores or {}).get(SCORER)
    found = (score.metadata or {}).get("isolation") if score is not None else None
    return cast(Isolation, found) if found in get_args(Isolation) else "unknown"


def outcome(sample: EvalSample) -> dict[str, Any]:
    """``outcome`` (``scored`` or ``harness_error``) and ``outcome_reason`` of one sample.

    A harness or environment fault is not the agent's: the sample errored (Inspect's
    ``error``), recorded no score, or its verdict failed with a harness failure code.
    """
    if sample.error:
        reason = sample.error.message.strip().splitlines() or ["sample error"]
        return {"outcome": "harness_error", "outcome_reason": reason[0]}
    score = (sample.scores or {}).get(SCORER)
    if score is None:
        return {"outcome": "harness_error", "outcome_reason": f"no {SCORER} score recorded"}
    failure = (score.metadata or {}).get("failure") or {}
    if isinstance(failure, dict) and failure.get("code") in HARNESS_FAULTS:
        return {
            "outcome": "harness_error",
            "outcome_reason": f"{failure['code']}: {failure.get('reason', '')}".strip(),
        }
    return {"outcome": "scored", "outcome_reason": None}


def sample_row(log: EvalLog, sample: EvalSample) -> dict[str, Any]:
    """The dataset row of one sample (one epoch) of one log."""
    arm, arm_settings = _arm(log, sample)
    settings = (log.eval.metadata or {}).get("settings") or {}
    return {
        "kind": "measured",
        "task": log.eval.task.split("/")[-1],
        "task_version": log.eval.task_version,
        "target": settings.get("target"),
        "arm": arm,
        "arm_settings": json.dumps(arm_settings, sort_keys=True, default=str),
        "task_args": json.dumps(log.eval.task_args or {}, sort_keys=True, default=str),
        "model": log.eval.model,
        "sample_id": str(sample.id),
        "epoch": sample.epoch,
        "seed": (settings.get("seed_offset") or 0) + sample.epoch,
        "eval_id": log.eval.eval_id,
        "run_id": log.eval.run_id,
        "created": log.eval.created,
        "log_status": log.status,
        "sample_error": sample.error.message.splitlines()[0] if sample.error else None,
        **outcome(sample),
        "isolation": isolation(sample),
        **_score(sample),
        **_questions(sample),
        **_usage(sample),
        "log_path": log.location,
    }


NOT_LOGS = frozenset({"eval-set.json", "logs.json"})
"""JSON files Inspect writes beside logs: an eval set's manifest and a folder's listing."""


def log_paths(paths: list[Path]) -> list[Path]:
    """Every ``.eval`` / ``.json`` log under the given files and folders, sorted."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            found += [
                q
                for q in p.rglob("*")
                if q.suffix in (".eval", ".json") and q.is_file() and q.name not in NOT_LOGS
            ]
        else:
            found.append(p)
    return sorted(set(found))


def superseding(logs: list[EvalLog]) -> list[EvalLog]:
    """One log per task run: a retry (same ``task_id``, as an eval set's) supersedes the rest.

    An interrupted eval leaves a log whose finished samples its retry runs again; both read
    would count those samples twice. Of the logs of one ``task_id`` the complete one is kept,
    else the latest.
    """
    best: dict[str, EvalLog] = {}
    for log in logs:
        kept = best.get(log.eval.task_id)
        rank = (log.status == "success", log.eval.created)
        if kept is None or rank > (kept.status == "success", kept.eval.created):
            best[log.eval.task_id] = log
    return [log for log in logs if best[log.eval.task_id] is log]


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    """Rows of every sample of every log under ``paths``; logs of other tasks are skipped."""
    logs = [read_eval_log(str(path)) for path in log_paths(paths)]
    rows = []
    for log in superseding(logs):
        if not log.samples or not (log.eval.metadata or {}).get("settings"):
            continue
        rows += [sample_row(log, s) for s in log.samples]
    return rows
