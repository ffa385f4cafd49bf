"""Keep README.md's sample of the main job true: made from a stored run by today's report code.

The Quick start shows what ``bash scripts/demo.sh`` prints. That text comes from a real run
(``results/readme/demo-verdict.json`` and the first progress lines it printed,
``demo-progress.txt``), rendered by the report code of this checkout
(``python -m evals.harness report``), abbreviated the same way each time, between the markers
``<!-- sample: demo -->`` and ``<!-- /sample: demo -->``::

    python scripts/readme_sample.py --run     # score the start kernel again, store, rewrite
    python scripts/readme_sample.py           # rewrite the README from the stored run
    python scripts/readme_sample.py --check   # exit 1 if the README differs (a test runs it)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DEMO = ROOT / "scripts" / "demo.sh"
STORED = ROOT / "results" / "readme"
VERDICT, PROGRESS = STORED / "demo-verdict.json", STORED / "demo-progress.txt"
START, END = "<!-- sample: demo -->", "<!-- /sample: demo -->"
WIDTH = 95
"""Lines of the report's run-wide part are wrapped here (the table's rows are not)."""


def demo_lines() -> list[str]:
    """What ``scripts/demo.sh`` says before the harness starts."""
    return re.findall(r'^echo "(.*)" >&2$', DEMO.read_text(), re.MULTILINE)


def expected_range() -> tuple[float, float]:
    """The demo's stated range of how many times faster SDPA is (``about A-Bx faster``)."""
    match = re.search(r"about (\d+)-(\d+)x faster", " ".join(demo_lines()))
    if match is None:
        raise SystemExit(f"error: {DEMO} no longer states how much faster SDPA is")
    return float(match.group(1)), float(match.group(2))


def rendered() -> list[str]:
    """The stored run's report, as this checkout's report code prints it."""
    proc = subprocess.run(
        [sys.executable, "-m", "evals.harness", "report", str(VERDICT)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise SystemExit(f"error: cannot render {VERDICT}: {proc.stderr.strip()}")
    return proc.stdout.splitlines()


def sample() -> str:
    """The README's sample block: the demo's words, the run's start, its abbreviated report.

    The table keeps its header, first and last rows; the legend stays whole; the run-wide
    lines are wrapped; of the notes, the first is kept and the rest counted.
    """
    lines = rendered()
    legend = lines.index("columns:")
    after = next(i for i in range(legend + 1, len(lines)) if not lines[i].startswith("  "))
    rows = lines[2:legend]
    head = [*demo_lines(), *PROGRESS.read_text().splitlines(), "..."]
    table = [lines[0], lines[1], rows[0], "...", rows[-1]]
    run_wide = [line for line in lines[after:] if not line.startswith(" ")]
    notes = [line for line in run_wide if line.startswith("note: ")]
    kept = [line for line in run_wide if not line.startswith("note: ")] + notes[:1]
    if len(lines[after:]) > len(kept):
        kept.append(f"... ({len(lines[after:]) - len(kept)} more note lines)")
    wrapped = [part for line in kept for part in textwrap.wrap(line, WIDTH)]
    body = "\n".join([*head, *table, *lines[legend:after], *wrapped])
    return f"{START}\n```text\n{body}\n```\n{END}"


def replaced(text: str, block: str) -> str:
    """``text`` with its sample block replaced by ``block``."""
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"error: {README} has no {START} ... {END} block")
    return pattern.sub(lambda _: block, text)


def run() -> None:
    """Score the start kernel on the dev suite as the demo does; store its verdict and start."""
    STORED.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "evals.harness", "score", "--target", "cpu_attention",
         "--kernel", "kernels/cpu_attention/start.cpp", "--json", str(VERDICT)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"error: the demo's score failed:\n{proc.stderr[-2000:]}")
    said = proc.stderr.splitlines()
    first = next(i for i, line in enumerate(said) if line.startswith("[1/"))
    PROGRESS.write_text("\n".join(said[: first + 1]) + "\n")


def main(argv: list[str]) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--run", action="store_true", help="score again before rewriting")
    mode.add_argument("--check", action="store_true", help="exit 1 if the README differs")
    args = parser.parse_args(argv)
    if args.run:
        run()
    text = README.read_text()
    new = replaced(text, sample())
    if args.check:
        if new != text:
            print("README.md's demo sample is out of date: python scripts/readme_sample.py")
            return 1
        return 0
    README.write_text(new)
    verdict = json.loads(VERDICT.read_text())
    print(f"README.md: sample of {verdict['suite']} run, seed {verdict['seed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
