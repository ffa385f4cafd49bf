"""On the device: collect the wheel packs a call carried and install each set once complete.

`scripts/device_wheels.py` writes `.whl-pack/N`; a call carries some of them. This copies what
arrived into /tmp/pack (kept while the machine stays warm), then for every set of the manifest
whose files are all there and that is not yet installed, joins split wheels and installs the set
into /tmp/site with one pip command. It prints one line per set: installed, already there, or
how many of its files are still missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

PACKS = Path(".whl-pack")
STORE = Path("/tmp/pack")
SITE = Path("/tmp/site")


def _collect() -> dict[str, dict[str, list[str]]]:
    STORE.mkdir(parents=True, exist_ok=True)
    for pack in sorted(PACKS.glob("*")):
        for item in pack.iterdir():
            shutil.copyfile(item, STORE / item.name)
    manifest = STORE / "manifest.json"
    return json.loads(manifest.read_text()) if manifest.exists() else {}


def _arrived(wheel: str, pieces: list[str]) -> bool:
    return (STORE / wheel).exists() or all((STORE / piece).exists() for piece in pieces)


def _join(wheel: str, pieces: list[str]) -> None:
    if (STORE / wheel).exists():
        return
    with (STORE / f"{wheel}.joining").open("wb") as out:
        for piece in pieces:
            out.write((STORE / piece).read_bytes())
    (STORE / f"{wheel}.joining").rename(STORE / wheel)


def main() -> int:
    manifests, failed = _collect(), 0
    for name, wheels in manifests.items():
        done = STORE / f".installed-{name}"
        if done.exists():
            print(f"{name}: already installed")
            continue
        missing = [wheel for wheel, pieces in wheels.items() if not _arrived(wheel, pieces)]
        if missing:
            print(f"{name}: {len(missing)} of {len(wheels)} wheels still to come")
            continue
        for wheel, pieces in wheels.items():
            _join(wheel, pieces)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--no-cache-dir",
            "--upgrade",
            "--target",
            str(SITE),
        ]
        result = subprocess.run(cmd + [str(STORE / w) for w in wheels])
        if result.returncode:
            print(f"{name}: pip install failed (exit {result.returncode})")
            failed += 1
            continue
        done.touch()
        print(f"{name}: installed {len(wheels)} wheels")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
