"""GPU tests: build the CUDA kernels the selected tests use at once, in parallel, first."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import ROOT

ALWAYS = [ROOT / "kernels" / "fa3_hopper" / "start.cu"]


def _kernels(items) -> list[Path]:
    """start.cu, and every .cu file the selected tests name in their parameters or module."""
    paths = set(ALWAYS)
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():
            if isinstance(value, Path) and value.suffix == ".cu":
                paths.add(value)
            elif isinstance(value, str) and value.endswith(".cu"):
                base = getattr(item.module, "CHEATS", None) or getattr(item.module, "BAD", None)
                if base is not None:
                    paths.add(Path(base) / value)
    return sorted(p for p in paths if p.is_file())


@pytest.fixture(scope="session", autouse=True)
def prebuilt_kernels(request):
    """Fill the build cache (8 compilers at a time); the tests then hit it."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from evals.harness.building.build import build
    from evals.harness.targets import get_target

    target = get_target("fa3_hopper")
    kernels = _kernels(request.session.items)

    def one(path: Path):
        return path.name, build(target, path)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(pool.map(one, kernels))
    failed = {k: r.failure.reason for k, r in results.items() if r.failure is not None}
    print(f"\nprebuilt {len(results)} kernels; build failures: {failed}")
    return results
