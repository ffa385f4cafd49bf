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
