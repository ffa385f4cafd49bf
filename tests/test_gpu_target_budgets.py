"""benchmarks/gpu_target.py holds every GPU target to a wall-time budget on each suite it runs."""


from evals.targets import target_folders
from tests.helpers import load_benchmark


def _gpu_target_module():
    return load_benchmark("gpu_target")


def test_every_gpu_target_has_a_budget_on_dev_and_full():
    budgets = _gpu_target_module().BUDGET_S
    gpu = {name for name, folder in target_folders().items() if folder.bench["device"] == "gpu"}
    assert set(budgets) == gpu
    for name in gpu:
        assert set(budgets[name]) == {"dev", "full"}
    # the FA4 self-check issue's figure: a dev run under 120 s without the build
    assert budgets["fa4_blackwell"]["dev"] == 120.0
