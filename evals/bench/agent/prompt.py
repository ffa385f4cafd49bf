"""The task prompt: goal, contract, rules, tools, scoring and budget. Nothing more."""

from __future__ import annotations

from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import bench_target


def build_prompt(settings: TaskSettings, contract: str) -> str:
    """The complete instructions the agent receives."""
    budget = [f"at most {settings.message_limit} messages", f"{settings.attempts} submissions"]
    if settings.token_limit:
        budget.append(f"{settings.token_limit} tokens")
    if settings.time_limit:
        budget.append(f"{settings.time_limit} seconds of wall time")
    return f"""{bench_target(settings.target).goal.format(kernel=settings.kernel_file)}

## Rules
- Your whole solution is the one file `{settings.kernel_file}` in your working directory; the
  contract below (also in `CONTRACT.md`) says what it must implement and which libraries and
  headers are forbidden.
- Edit it with the shell. Do not modify anything outside your working directory.

## Tools
- `bash`: a shell in your working directory.
- `check()`: build your kernel and verify it on every scenario of the {settings.suite} suite.
- `bench()`: check, then time your kernel against the upstream(s) on the {settings.suite} suite.
- `submit()`: claim you are done. Your kernel is then verified on the {settings.suite} suite;
  if it fails, you get the report and continue working.

## Scoring
After you submit, your kernel is scored on the {settings.score_suite} suite (it includes
scenarios you have not seen) with fresh random inputs: every scenario must be correct (max
error at most twice the upstream's error against a float64 reference, plus a small floor; no
NaN, Inf or unwritten output), and the score is the geometric-mean speedup against
`{settings.upstream}` over all scenarios; 0 if any scenario fails.

## Budget
{", ".join(budget)}.

## Contract
{contract}
"""
