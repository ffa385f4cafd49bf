r"""One GPU, many agents: 1, 2 and 4 scripted agents at once on one GPU, a self-check beside.

For each N of ``--agents``: one Inspect eval of TASK in the local sandbox with N epochs run at
once (``max_samples=N``), each sample a scripted offline agent (``kernel_agent``) that writes
``--kernel`` into its workspace, edits it (a unique comment: a fresh build, as after an agent's
edit) and benches it ``--benches`` times, then submits it to the scorer's ``score``. While the
agents run, the target's upstream is benched against itself (``bench --candidate-upstream``,
FA3 on fa3_hopper) ``--selfchecks`` times, started as the agents start building: its geomean
must stay 1.00 +/- 0.01 with other runs building beside it.

From each harness run's ``harness_run`` event (:mod:`evals.bench.scoring.run_cost`) and the
eval's wall time it prints, per N: evaluations (harness runs) per GPU-hour, the lock's busy
share of the wall time, the share of lock-held time spent in timed kernel calls, the lock
waits, the builds, the scores, and the self-checks' geomeans. Writes ``OUT/concurrency.json``
and ``OUT/logs/``.

    # on a GPU host (the H200: device_call.sh's `concurrency` step)
    python benchmarks/concurrency.py --task tasks/fa3_hopper --kernel kernels/fa3_hopper/start.cu \
        --agents 1 --agents 2 --agents 4 --out /tmp/concurrency
    # on the CPU target (minutes)
    python benchmarks/concurrency.py --task tasks/cpu_attention -T suite=smoke \
        -T score_suite=smoke --kernel kernels/cpu_attention/start.cpp --agents 1 --agents 2 \
        --out /tmp/concurrency

Exit status: 0 every sample scored and every self-check within 1.00 +/- 0.01; 1 otherwise (the
figures are still printed and written); 2 bad input; 130 interrupted (Ctrl-C, or ``timeout -s
INT``): the rounds done and the interrupted round's finished self-checks are printed and written.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing it

SELF_CHECK_TOLERANCE = 0.01
"""A self-check's geomean must lie within 1 +/- this (the issue's bound)."""


@dataclass
class SelfCheck:
    """One bench of the upstream against itself, taken while the agents ran."""

    geomean: float | None
    started_s: float
    lock_waited_s: float
    wall_s: float
    error: str | None = None
    lock_held_s: float = 0.0


class Interrupted(Exception):
    """The round's eval was interrupted before it wrote a log; ``checks``: the self-checks done."""

    def __init__(self, checks: list[SelfCheck]) -> None:
        super().__init__("interrupted")
        self.checks = checks


@dataclass
class Round:
    """N agents at once: what the eval cost and what the harness runs spent.

    Attributes:
        agents: N, the samples run at once.
        wall_s: The eval's wall time (start-up to the last score).
        runs: Harness runs of the agents (benches and scores).
        per_gpu_hour: ``runs`` per hour of the one GPU's wall time.
        lock_busy: Share of ``wall_s`` that some run (self-checks included) held the lock.
        timing_share: Share of the agents' lock-held seconds spent in timed kernel calls.
        lock_waited_s: Each agent run's wait for the lock, in seconds.
        build_s: Each agent run's build, in seconds (0: from the cache).
        scores: Each sample's speedup (None: the sample scored no speedup).
        self_checks: The self-checks taken beside the agents.
    """

    agents: int
    wall_s: float
    runs: int
    per_gpu_hour: float
    lock_busy: float
    timing_share: float
    lock_waited_s: list[float]
    build_s: list[float]
    scores: list[float | None]
    self_checks: list[SelfCheck] = field(default_factory=list)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", required=True, help="task folder, e.g. tasks/fa3_hopper")
    p.add_argument("--kernel", required=True, type=Path, help="the kernel every agent replays")
    p.add_argument("--agents", type=int, action="append", help="N at once (repeatable; 1 2 4)")
    p.add_argument("--benches", type=int, default=1, help="benches per agent before it submits")
    p.add_argument("--selfchecks", type=int, default=1, help="self-checks beside each round")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("-T", dest="task_args", action="append", default=[], metavar="NAME=VALUE")
    return p


def agent_script(kernel: Path, kernel_file: str, benches: int) -> list[Any]:
    """The scripted agent: write the kernel, then (edit, bench) ``benches`` times, submit."""
    from evals.replay import tool_call, write_file

    # a unique comment per edit: each bench builds anew, as after an agent's change
    edit = tool_call(
        "bash", command=f'echo "// edit $(od -An -N8 -tx8 /dev/urandom)" >> {kernel_file}'
    )
    steps = [write_file(kernel.read_text(), kernel_file)]
    for _ in range(benches):
        steps += [edit, tool_call("bench")]
    return [*steps, tool_call("submit")]


def self_check(target: str, upstream: str, suite: str, path: Path, t0: float) -> SelfCheck:
    """Bench ``upstream`` against itself on ``suite`` (the harness CLI, as a user runs it)."""
    argv = [sys.executable, "-m", "evals.harness", "bench", "--target", target]
    argv += ["--candidate-upstream", upstream, "--suite", suite, "--json", str(path), "--quiet"]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    from evals.bench.scoring.run_cost import RunCost
    from evals.harness.verdict.record import Verdict

    try:
        verdict = Verdict.from_json(json.loads(path.read_text()))
    except (OSError, ValueError):
        tail = " | ".join((done.stderr or "").strip().splitlines()[-2:])
        return SelfCheck(
            None, started - t0, 0.0, wall, f"no verdict (rc {done.returncode}): {tail}"
        )
    geomean = verdict.aggregates.geomean_speedup.get(upstream)
    cost = RunCost.from_verdict("bench", verdict)
    error = None if geomean else "no geomean"
    return SelfCheck(geomean, started - t0, cost.lock_waited_s, wall, error, cost.lock_held_s)


def run_round(args: argparse.Namespace, agents: int, targs: dict[str, str], suite: str) -> Round:
    """One eval of ``agents`` samples at once, with the self-checks beside it."""
    from inspect_ai import eval as inspect_eval

    from evals.bench import bench_target, kernel_agent
    from evals.replay import replay_model

    target = bench_target(Path(args.task).name)
    model = replay_model(agent_script(args.kernel, target.kernel_file, args.benches))
    checks: list[SelfCheck] = []
    paths = [args.out / f"selfcheck-{agents}-{i}.json" for i in range(args.selfchecks)]
    t0 = time.monotonic()

    def beside() -> None:
        for path in paths:
            checks.append(self_check(target.name, target.upstream, suite, path, t0))

    thread = threading.Thread(target=beside, daemon=True)
    thread.start()
    logs = inspect_eval(
        args.task,
        solver=kernel_agent(attempts=1),
        model=model,
        epochs=agents,
        max_samples=agents,
        task_args=targs,
        log_dir=str(args.out / "logs"),
        metadata={"benchmark": "concurrency", "agents": agents},
        display="plain",
    )
    if not logs:  # interrupted: no log; a self-check still running dies with the process
        raise Interrupted(list(checks))
    thread.join()
    wall = time.monotonic() - t0
    return summarise(logs[0], agents, wall, checks)


def summarise(log: Any, agents: int, wall: float, checks: list[SelfCheck]) -> Round:
    """The round's figures from the eval log's ``harness_run`` events and scores."""
    from evals.bench.scoring.run_cost import run_costs

    costs = [c for s in log.samples or [] for c in run_costs(s.events)]
    scores = []
    for sample in log.samples or []:
        value = next(iter((sample.scores or {}).values()), None)
        found = value.value.get("speedup") if value and isinstance(value.value, dict) else None
        scores.append(float(found) if isinstance(found, int | float) and found > 0 else None)
    held = sum(c.lock_held_s for c in costs)
    return Round(
        agents=agents,
        wall_s=wall,
        runs=len(costs),
        per_gpu_hour=len(costs) / wall * 3600.0,
        lock_busy=(held + sum(c.lock_held_s for c in checks)) / wall,
        timing_share=sum(c.timed_calls_s for c in costs) / held if held else 0.0,
        lock_waited_s=[c.lock_waited_s for c in costs],
        build_s=[c.build_s for c in costs],
        scores=scores,
        self_checks=checks,
    )


def table(rounds: list[Round]) -> str:
    """The figures, one line per round, then the self-checks."""
    lines = [
        "agents  wall_s  runs  runs/GPU-h  lock_busy  timing/lock  wait_s(sum/max)  build_s(sum)"
        "  scores"
    ]
    for r in rounds:
        waits = f"{sum(r.lock_waited_s):.1f}/{max(r.lock_waited_s, default=0.0):.1f}"
        scores = " ".join(f"{s:.4f}x" if s else "none" for s in r.scores)
        lines.append(
            f"{r.agents:>6}  {r.wall_s:6.1f}  {r.runs:4}  {r.per_gpu_hour:10.1f}"
            f"  {r.lock_busy:9.2f}  {r.timing_share:11.3f}  {waits:>15}"
            f"  {sum(r.build_s):12.1f}  {scores}"
        )
    lines += [self_check_line(r.agents, c) for r in rounds for c in r.self_checks]
    return "\n".join(lines)


def self_check_line(agents: int, c: SelfCheck, *, round_: str = "") -> str:
    """One self-check's line (``round_``: e.g. ", interrupted round")."""
    said = f"{c.geomean:.4f}x" if c.geomean else f"failed: {c.error}"
    return (
        f"self-check beside {agents} agent(s){round_}: {said} (started at {c.started_s:.1f} s, "
        f"waited {c.lock_waited_s:.1f} s for the lock, {c.wall_s:.1f} s)"
    )


def passed(rounds: list[Round]) -> bool:
    """Every sample scored and every self-check stayed within 1.00 +/- the tolerance."""
    scored = all(s is not None for r in rounds for s in r.scores)
    checks = [c.geomean for r in rounds for c in r.self_checks]
    return scored and all(g is not None and abs(g - 1.0) <= SELF_CHECK_TOLERANCE for g in checks)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, print and write the figures; returns the exit status."""
    args = parser().parse_args(argv)
    from evals.bench.config.targets import TARGETS
    from evals.bench.config.validate import TaskArgumentError
    from evals.inspect_preflight import split_pairs, task_args

    name = Path(args.task).name
    try:
        if name not in TARGETS or TARGETS[name].unavailable is not None:
            raise ValueError(f"--task {args.task}: expected tasks/<a runnable target>")
        if not args.kernel.is_file():
            raise ValueError(f"--kernel {args.kernel}: no such file")
        if min(args.agents or [1]) < 1 or args.benches < 0 or args.selfchecks < 0:
            raise ValueError("--agents must be >= 1, --benches and --selfchecks >= 0")
        pairs = split_pairs(args.task_args)
        suite = task_args(name, [*pairs, ("sandbox", "local")]).suite
    except (ValueError, TaskArgumentError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    targs = {**dict(pairs), "sandbox": "local"}
    rounds: list[Round] = []
    for agents in args.agents or [1, 2, 4]:
        print(f"== {agents} agent(s) at once", flush=True)
        try:
            rounds.append(run_round(args, agents, targs, suite))
        except Interrupted as stop:
            return interrupted(args.out, rounds, agents, stop.checks)
        write(args.out, rounds)
        print(table(rounds[-1:]), flush=True)
    print("\n" + table(rounds))
    return 0 if passed(rounds) else 1


def write(out: Path, rounds: list[Round], extra: dict[str, Any] | None = None) -> None:
    """``OUT/concurrency.json``: the rounds done (and ``extra``, e.g. an interrupted round)."""
    doc: Any = [asdict(r) for r in rounds]
    if extra is not None:
        doc = {"rounds": doc, **extra}
    (out / "concurrency.json").write_text(json.dumps(doc, indent=2))


def interrupted(out: Path, rounds: list[Round], agents: int, checks: list[SelfCheck]) -> int:
    """Print and write what an interrupted run finished; the exit status 130."""
    write(
        out, rounds, {"interrupted": {"agents": agents, "self_checks": [asdict(c) for c in checks]}}
    )
    print(f"interrupted during the round of {agents} agent(s): no log of it", file=sys.stderr)
    if rounds:
        print("\n" + table(rounds))
    for c in checks:
        print(self_check_line(agents, c, round_=", interrupted round"))
    return 130


if __name__ == "__main__":
    sys.exit(main())
