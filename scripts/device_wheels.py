"""Pack wheel sets for a GPU host without a package index into carry-sized folders.

The H200 device reaches no registry and one `run` call carries at most 64 MiB with the working
tree, while FA3 (28 MB), FA4 with its CuTe DSL (107 MB) and inspect-ai with its dependencies
(69 MB) are needed there. This writes `.whl-pack/1`, `.whl-pack/2`, ... (ignored by git), each
at most `--pack-mb` megabytes, filled in set order (fa3, then fa4, then inspect) and splitting
a wheel across packs where it does not fit. Each pack holds every set's manifest, so on the
device `scripts/device_unpack.py` (run by `device_call.sh` at the start of every call) collects
what a call carried into /tmp/pack and installs a set into /tmp/site as soon as all its files
have arrived: carry pack 1 in the first call of a warm lease, pack 2 in the next, and so on.

Usage: python3 scripts/device_wheels.py [--set fa3 --set fa4 --set inspect] [--pack-mb 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".whl-pack"
PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "any",
]
# (requirements, resolve dependencies?, distributions the device image already has)
SETS: dict[str, tuple[list[str], bool, set[str]]] = {
    "fa3": (["fa3-fwd==0.0.3"], False, set()),
    # The pins sandboxes/blackwell/compose.yaml installs.
    "fa4": (
        [
            "flash-attn-4==4.0.0b36",
            "nvidia-cutlass-dsl==4.8.1",
            "nvidia-cutlass-dsl-libs-base==4.8.1",
            "nvidia-cutlass-dsl-libs-cu13==4.8.1",
            "nvidia-cutlass-dsl-libs-core==4.8.1",
            "quack-kernels==0.6.5",
            "apache-tvm-ffi==0.1.15.post2",
            "torch-c-dlpack-ext==0.1.5",
            "cuda-bindings>=13,<14",
            "protobuf",
        ],
        False,
        set(),
    ),
    # numpy is in the image; debugpy (--debug) is not needed there (botocore is: inspect-ai
    # imports it at start-up).
    "inspect": (["inspect-ai==0.3.285"], True, {"numpy", "debugpy"}),
}


def _download(requirements: list[str], deps: bool, dest: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        "-d",
        str(dest),
    ]
    cmd += [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    if not deps:
        cmd.append("--no-deps")
    subprocess.run(cmd + requirements, check=True)


def _project(wheel: Path) -> str:
    return wheel.name.split("-")[0].lower().replace("_", "-")


def _pieces(files: list[Path], pack_bytes: int) -> list[tuple[str, Path, int, int]]:
    """Cut the set's files into (name, source, offset, length) pieces that fill packs in order."""
    pieces, room = [], pack_bytes
    for path in files:
        size, offset, part = path.stat().st_size, 0, 0
        while offset < size:
            room = room or pack_bytes
            length = min(room, size - offset)
            whole = offset == 0 and length == size
            pieces.append(
                (path.name if whole else f"{path.name}.part-{part:02d}", path, offset, length)
            )
            offset, part, room = offset + length, part + 1, room - length
    return pieces


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="sets", action="append", choices=sorted(SETS))
    parser.add_argument("--pack-mb", type=float, default=50.0)
    args = parser.parse_args()
    names = args.sets or ["fa3", "fa4", "inspect"]
    pack_bytes = int(args.pack_mb * 1e6)
    shutil.rmtree(OUT, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        files, sets = [], {}
        for name in names:
            requirements, deps, skip = SETS[name]
            dest = Path(tmp) / name
            _download(requirements, deps, dest)
            wheels = sorted(w for w in dest.glob("*.whl") if _project(w) not in skip)
            sets[name] = [w.name for w in wheels]
            files += wheels
        pieces = _pieces(files, pack_bytes)
        # {set: {wheel: [the files it arrives as, in order]}}
        manifests = {
            name: {
                wheel: [piece for piece, source, _, _ in pieces if source.name == wheel]
                for wheel in wheels
            }
            for name, wheels in sets.items()
        }
        pack, used = 1, 0
        for piece, source, offset, length in pieces:
            if used + length > pack_bytes:
                pack, used = pack + 1, 0
            folder = OUT / str(pack)
            folder.mkdir(parents=True, exist_ok=True)
            with source.open("rb") as src, (folder / piece).open("wb") as dst:
                src.seek(offset)
                dst.write(src.read(length))
            used += length
        for number in range(1, pack + 1):
            (OUT / str(number) / "manifest.json").write_text(json.dumps(manifests, indent=1))
    for number in range(1, pack + 1):
        size = sum(f.stat().st_size for f in (OUT / str(number)).iterdir()) / 1e6
        print(f".whl-pack/{number}: {size:.1f} MB")
    print(f"carry one pack per device call, in order, in one warm lease ({pack} calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
