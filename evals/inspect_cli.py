"""``python -m evals.inspect_cli``: Inspect's ``inspect`` command, made safe to script.

    python -m evals.inspect_cli eval tasks/cpu_attention --solver kernel_agent \
        --model mockllm/model -T suite=smoke -T score_suite=smoke

Same arguments as ``inspect`` (it runs Inspect's own console script in this process), plus:

- offline ``mockllm``: when ``--model`` is ``mockllm/...``, token counts are estimated from text
  length (mockllm's outputs carry no usage, and Inspect's default count downloads a tokenizer);
- the arm in the log: ``eval`` logs are named ``<created>_<task>-<arm>_<id>.eval`` and tagged
  ``arm:<arm>`` (the arm is ``--solver``'s name, ``default`` without one);
- a line at least every 30 s on stderr while it runs without a terminal (:mod:`evals.heartbeat`);
- a failed eval fails the command: after ``eval``, each new log is read and the exit status is 1
  (one line per log on stderr) when a log's status is not ``success``; ``inspect`` itself
  exits 0 when the eval errors;
- a wrong ``--solver``, ``-S`` or ``-T`` value of this project's tasks, a ``--model`` without
  its provider (or the provider's package) and a ``docker`` sandbox without an engine are one
  line on stderr and exit status 2, before Inspect builds the task
  (:mod:`evals.inspect_preflight`).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points
from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import ModelAPI

from evals.heartbeat import heartbeat
from evals.inspect_preflight import option, preflight

EXIT_EVAL_FAILED = 1
EXIT_BAD_ARGUMENTS = 2


async def _estimate_tokens(self: ModelAPI, text: str) -> int:
    return max(1, len(text) // 4)


def offline_token_counts() -> None:
    """Estimate token counts from text length (no tokenizer download)."""
    ModelAPI.count_text_tokens = _estimate_tokens  # type: ignore[method-assign]


def tag_arm(args: list[str]) -> list[str]:
    """Name and tag ``eval`` logs after the arm (``--solver``); other commands unchanged."""
    if not args or args[0] != "eval":
        return args
    arm = (option(args, "--solver") or "default").split("/")[-1]
    os.environ.setdefault(
        "INSPECT_EVAL_LOG_FILE_PATTERN", f"{{task}}-{arm.replace('_', '-')}_{{id}}"
    )
    tags = ",".join(t for t in (option(args, "--tags"), f"arm:{arm}") if t)
    rest = [a for i, a in enumerate(args) if not _is_tags(args, i)]
    return [*rest, "--tags", tags]


def _is_tags(args: list[str], i: int) -> bool:
    a = args[i]
    return a == "--tags" or a.startswith("--tags=") or (i > 0 and args[i - 1] == "--tags")


def _logs(log_dir: str) -> set[str]:
    if not Path(log_dir).exists():
        return set()
    return {info.name for info in list_eval_logs(log_dir)}


def run_inspect(args: list[str]) -> int:
    """Run Inspect's console script ``inspect`` with ``args`` in this process."""
    [script] = entry_points(group="console_scripts", name="inspect")
    sys.argv = ["inspect", *args]
    try:
        script.load()()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def failed_logs(names: set[str]) -> list[str]:
    """One line per log whose status is not ``success``."""
    lines = []
    for name in sorted(names):
        log = read_eval_log(name, header_only=True)
        if log.status != "success":
            why = log.error.message.strip().splitlines()[-1] if log.error else "no error recorded"
            lines.append(f"error: {name}: status {log.status}: {why}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run ``inspect ARGS``; returns the exit status (1 when an eval's log is not success).

    A wrong argument or a missing Docker engine is one line on stderr and exit status 2.
    """
    args = tag_arm(list(sys.argv[1:] if argv is None else argv))
    problem = preflight(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS
    model = option(args, "--model") or os.environ.get("INSPECT_EVAL_MODEL") or ""
    if model.startswith("mockllm/"):
        offline_token_counts()
    log_dir = option(args, "--log-dir") or os.environ.get("INSPECT_LOG_DIR") or "./logs"
    before = _logs(log_dir) if args[:1] == ["eval"] else set()
    with heartbeat(f"inspect {' '.join(args[:2])}", log_dir=Path(log_dir)):
        code = run_inspect(args)
    if args[:1] != ["eval"] or code != 0:
        return code
    failures = failed_logs(_logs(log_dir) - before)
    for line in failures:
        print(line, file=sys.stderr)
    return EXIT_EVAL_FAILED if failures else 0


if __name__ == "__main__":
    sys.exit(main())
