"""Issue 42: ``results/`` holds data only; every measurement folder says how it was made."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = (".py", ".sh", ".bash", ".ipynb")


def _tracked(under: str) -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", under], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [ROOT / line for line in out.stdout.splitlines()]


def test_results_hold_no_scripts():
    code = [p.relative_to(ROOT) for p in _tracked("results") if p.suffix in CODE]
    assert not code, f"scripts belong in benchmarks/ or a README's command block: {code}"


def test_every_measurement_folder_has_a_readme():
    base = ROOT / "results" / "measurements"
    rel = [p.relative_to(base).parts for p in _tracked("results/measurements")]
    folders = {base.joinpath(*parts[:2]) for parts in rel if len(parts) > 2}
    missing = [d.relative_to(ROOT) for d in sorted(folders) if not (d / "README.md").exists()]
    assert not missing, f"measurement folders without a README (how they were made): {missing}"


def test_every_shipped_row_is_at_the_task_version_of_the_code():
    import pandas as pd

    from evals.targets import target_folder

    stale = set()
    for name in ("runs.parquet", "reference.parquet"):
        path = ROOT / "results" / "dataset" / name
        if not path.exists():
            continue
        frame = pd.read_parquet(path)
        if "task_version" not in frame or frame.empty:
            continue
        for task, version in set(zip(frame["task"], frame["task_version"], strict=True)):
            now = target_folder(str(task)).version
            if int(version) != now:
                stale.add(f"{name}: {task} version {version}, the code's is {now}")
    assert not stale, f"rebuild the shipped dataset and leaderboard: {sorted(stale)}"


def test_the_leaderboard_names_only_the_versions_of_the_code():
    import re

    from evals.targets import target_folder

    text = (ROOT / "results" / "leaderboard" / "README.md").read_text()
    found = re.findall(r"^## (\w+) \(version ([\d, ]+)\)", text, flags=re.MULTILINE)
    assert found, "the leaderboard has no task section"
    for task, versions in found:
        now = target_folder(task).version
        assert {int(v) for v in versions.split(",")} == {now}, (task, versions, now)
