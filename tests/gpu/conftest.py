"""GPU tests: build the CUDA kernels the selected tests use at once, in parallel, first; a test
whose own process works the GPU holds the harness's device lock (:func:`device_alone`)."""

import contextlib
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


@contextlib.contextmanager
def gpu_held(*, shared: bool):
    """Hold the harness's lock of the GPU, as a run's checks (shared) or its timing does.

    The GPU tests run side by side (``-n``): GPU work a test makes outside the harness would
    otherwise share the device with another test's timed or traced calls (a context switch
    inside a traced kernel's recorded duration fails an honest kernel's trace check).
    """
    from evals.harness.measurement.device_lock import device_lock
    from evals.harness.targets import get_target

    what = "a GPU test's own work"
    with device_lock(get_target("fa3_hopper").device_key(), what=what, timeout_s=900,
                     shared=shared):
        yield


@pytest.fixture
def device_alone():
    """The test's GPU work holds the device's lock exclusive (it times, or must not be timed
    beside: see :func:`gpu_held`)."""
    with gpu_held(shared=False):
        yield
