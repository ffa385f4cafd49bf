"""One folder per target, found by discovery; fa4_blackwell as the proof (no GPU needed)."""

import json
import shutil
import subprocess
import sys

import pytest
import torch

from evals.bench.agent.recipe import load_recipe
from evals.bench.config.targets import TARGETS, bench_target
from evals.harness import HarnessInputError
from evals.harness.failures import Code
from evals.harness.scenarios import Scenario
from evals.harness.static.static_checks import check_symbols
from evals.harness.targets import get_target, target_names
from evals.targets import target_folder, target_folders
from tests.cuda_objects import compile_candidate, needs_nvcc
from tests.helpers import BUILD_CACHE, ROOT

FA4 = "fa4_blackwell"


@pytest.mark.parametrize("name", ["cpu_attention", "fa3_hopper", FA4])
def test_each_target_folder_holds_the_whole_target(name):
    folder = target_folder(name)
    target = get_target(name)
    suffix = target.contract.source_suffix
    for suite in ("smoke", "dev", "full", "draw"):
        assert folder.file("suites", f"{suite}.json").is_file()
    assert folder.file(f"trivial{suffix}").is_file()
    assert target.policy is not None and target.policy.trivial_kernel == folder.file(
        f"trivial{suffix}"
    )
    bench = bench_target(name)
    assert bench.contract().is_file() and bench.start().name.endswith(suffix)
    assert load_recipe(bench.recipe()).target == name
    assert any(bench.context().iterdir())
    # the user-facing entry points: kernels/<name> links into the folder, a thin task file
    assert (ROOT / "kernels" / name).resolve() == folder.file("kernel").resolve()
    assert (ROOT / target.contract.document).resolve() == folder.file("kernel", "CONTRACT.md")
    assert (ROOT / "tasks" / name / f"{name}.py").is_file()
    assert (ROOT / "sandboxes" / bench.sandbox_folder / "compose.yaml").is_file()


def test_targets_are_found_by_discovery_and_adding_one_is_adding_a_folder(tmp_path, monkeypatch):
    import evals.targets as registry

    assert target_names() == tuple(target_folders()) == tuple(sorted(TARGETS))
    for name in target_names():
        shutil.copytree(target_folder(name).path, tmp_path / name)
    shutil.copytree(target_folder("cpu_attention").path, tmp_path / "cpu_copy")
    with monkeypatch.context() as patch:
        patch.setattr(registry, "ROOT", tmp_path)
        registry.target_folders.cache_clear()
        try:
            assert "cpu_copy" in target_folders()
            assert target_folder("cpu_copy").version == target_folder("cpu_attention").version
        finally:
            registry.target_folders.cache_clear()
    assert "cpu_copy" not in target_folders()


def test_a_folder_with_a_broken_version_history_is_refused(tmp_path):
    from evals.targets import _load

    (tmp_path / "target.toml").write_text(
        'harness = "target:X"\n[bench]\n[[versions]]\nversion = 2\nchange = "x"\n'
    )
    with pytest.raises(ValueError, match="versions must run 1, 2"):
        _load(tmp_path)


@pytest.mark.parametrize("name", ["cpu_attention", "fa3_hopper", FA4])
def test_a_task_version_is_its_folders_last_history_entry(name):
    from evals.bench.config.settings import TaskSettings
    from evals.bench.task import kernel_task

    folder = target_folder(name)
    assert [v.number for v in folder.versions] == list(range(1, folder.version + 1))
    upstream = bench_target(name).upstream
    task = kernel_task(TaskSettings(target=name, upstream=upstream, sandbox="local"), root=ROOT)
    assert task.version == folder.version
    assert task.metadata["version_change"] == folder.versions[-1].change


def _params(suite):
    return [s["params"] for s in suite["scenarios"]]


def test_fa4_suites_are_fa3s_less_fp8_and_large_head_dims():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_fa4_suites
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for name in ("smoke", "dev", "full"):
        shipped = json.loads(target_folder(FA4).file("suites", f"{name}.json").read_text())
        # the shipped file is what the script derives from fa3_hopper's suite today
        assert shipped == make_fa4_suites.derive_suite(name)
        assert all(p["dtype"] == "bfloat16" and p["head_dim"] <= 128 for p in _params(shipped))
    full = get_target(FA4).load_suite("full")
    dev = get_target(FA4).load_suite("dev")
    study = [s for s in full.scenarios if not s.contract]
    assert len(study) == 126  # the study's 124 Blackwell scenarios were of this space
    assert len([s for s in dev.scenarios if not s.contract]) == 18
    fa3_ids = {s.id for s in get_target("fa3_hopper").load_suite("full").scenarios}
    assert {s.id for s in full.scenarios} <= fa3_ids
    draw = json.loads(target_folder(FA4).file("suites", "draw.json").read_text())
    assert draw["space"]["dtype"] == {"choice": ["bfloat16"]}
    assert max(draw["space"]["head_dim"]["choice"]) == 128


def test_fa4_builds_for_blackwell_unless_a_dry_run_on_hopper_is_asked_for(monkeypatch):
    monkeypatch.delenv("KERNELSEEK_FA4_ARCH", raising=False)
    blackwell = get_target(FA4)
    assert "-gencode=arch=compute_100a,code=sm_100a" in blackwell.build.extra_cuda_cflags
    assert blackwell.describe_device()["arch"] == "sm_100a"
    assert "note" not in blackwell.describe_device()
    monkeypatch.setenv("KERNELSEEK_FA4_ARCH", "sm_90a")
    dry = get_target(FA4)
    assert "-gencode=arch=compute_90a,code=sm_90a" in dry.build.extra_cuda_cflags
    assert dry.describe_device()["note"] == "dry run on sm_90, not a Blackwell measurement"
    # a different build command: a dry run's builds never share a cache entry with Blackwell's
    assert dry.build.to_json() != blackwell.build.to_json()
    # score's cleaned environment keeps it: the build and the worker agree with the parent
    from evals.harness.sandbox.hygiene import clean_environment

    assert clean_environment({"KERNELSEEK_FA4_ARCH": "sm_90a"})["KERNELSEEK_FA4_ARCH"] == "sm_90a"
    monkeypatch.setenv("KERNELSEEK_FA4_ARCH", "sm_80")
    with pytest.raises(HarnessInputError, match="KERNELSEEK_FA4_ARCH='sm_80': use sm_100a"):
        get_target(FA4)


def test_fa4s_upstreams_and_what_a_machine_without_fa4_is_told():
    target = get_target(FA4)
    assert [u.name for u in target.upstreams] == ["fa4", "cudnn"]
    assert target.accuracy.baseline == "fa4" and set(target.accuracy.floors) == {"bfloat16"}
    try:
        import flash_attn.cute  # noqa: F401
    except ImportError:
        assert target.missing_upstream().startswith("no FlashAttention-4: ")
        assert "pip install flash-attn-4==4.0.0b36" in target.missing_upstream()
        scenario = target.load_suite("smoke").scenarios[0]
        assert "not importable" in target.upstream("fa4").unsupported_reason(scenario)


def test_the_blackwell_sandbox_pins_the_fa4_the_target_names():
    from evals.targets.fa4_blackwell.upstreams import FA4_PIN

    compose = (ROOT / "sandboxes" / "blackwell" / "compose.yaml").read_text()
    assert FA4_PIN.replace("flash-attn-4", "flash-attn-4[cu13]") in compose


@pytest.mark.long  # two sm_100a builds, about a minute quiet (two beside hogs)
@needs_nvcc
@pytest.mark.parametrize(
    "source",
    [ROOT / "kernels" / FA4 / "start.cu", ROOT / "tests/data" / FA4 / "blackwell_techniques.cu"],
)
def test_sm_100a_code_builds_and_passes_the_static_checks(source, monkeypatch):
    # tcgen05, tensor memory, the 2-CTA MMA, TMA and clusters: all within the contract
    monkeypatch.delenv("KERNELSEEK_FA4_ARCH", raising=False)
    library = compile_candidate(source, BUILD_CACHE, target=FA4)
    obj = library.parent / "candidate.o"
    strings = subprocess.run(["strings", str(obj)], capture_output=True, text=True).stdout
    assert "-arch sm_100a" in strings
    failure, finding = check_symbols(library, get_target(FA4).policy)
    assert failure is None, failure
    assert "no system-call instructions" in finding, finding


# Three of the GPU corpus's static-check cheats, as fa4's start kernel plus the cheat's host
# code (the corpus's files include ATen's CUDA context, whose cuSPARSE header a machine with
# only nvcc lacks): built for sm_100a, each must fail the checks for its reason.
SM100_CHEATS = {
    "vendor library": """
extern "C" int cublasCreate_v2(void** handle);
void* kernelseek_cheat_handle() { void* h = nullptr; cublasCreate_v2(&h); return h; }
""",
    "dynamic loading": """
extern "C" void* dlopen(const char*, int);
void* kernelseek_cheat_library() { return dlopen("libcudnn.so.9", 1); }
""",
    "raw system calls": """
long kernelseek_cheat_syscall(long n, long a) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(0L), "d"(0L) : "rcx", "r11", "memory");
  return r;
}
""",
}


@needs_nvcc
@pytest.mark.long  # three sm_100a builds, about a minute quiet: the second tier
@pytest.mark.parametrize("reason", list(SM100_CHEATS))
def test_gpu_cheats_built_for_sm_100a_fail_the_static_checks(reason, tmp_path, monkeypatch):
    # the Blackwell build runs the same symbol and instruction checks as the Hopper one
    monkeypatch.delenv("KERNELSEEK_FA4_ARCH", raising=False)
    start = (ROOT / "kernels" / FA4 / "start.cu").read_text()
    source = tmp_path / "cheat.cu"
    source.write_text(start + SM100_CHEATS[reason])
    library = compile_candidate(source, BUILD_CACHE, target=FA4)
    failure, _ = check_symbols(library, get_target(FA4).policy)
    assert failure is not None and failure.code == Code.FORBIDDEN_SYMBOL, (reason, failure)
    assert reason in failure.reason, failure.reason


def test_fa4s_kv_cache_call_appends_then_attends_the_grown_lengths(monkeypatch):
    # FA4 has no append: its upstream scatters the new rows into the cache, then attends with
    # seqused_k = cache_seqlens + seqlen_new (checked with a stand-in for flash_attn.cute)
    from evals.targets.fa4_blackwell import upstreams

    seen = {}

    class FakeFa4:
        @staticmethod
        def flash_attn_varlen_func(q, k, v, **kwargs):
            seen.update(kwargs, k=k.clone())
            return q.clone(), None

    batch, cache, rows, heads, dim = 2, 8, 3, 1, 4
    inputs = {
        "q": torch.randn(batch, rows, heads, dim),
        "k_cache": torch.zeros(batch, cache, heads, dim),
        "v_cache": torch.zeros(batch, cache, heads, dim),
        "cache_seqlens": torch.tensor([2, 5], dtype=torch.int32),
        "k_new": torch.ones(batch, rows, heads, dim),
        "v_new": torch.full((batch, rows, heads, dim), 2.0),
        "causal": True,
        "softmax_scale": 0.5,
    }
    up = upstreams.Fa4.__new__(upstreams.Fa4)
    up._module, up._error, up._version = FakeFa4, None, "fake"
    call = up.prepare(inputs)
    # the second call follows lengths refilled in place (the harness's stale-result probe:
    # positions kept from the first call failed FA4's own self-check on the H200)
    for lens in ([2, 5], [4, 0]):
        inputs["cache_seqlens"].copy_(torch.tensor(lens))
        for name in ("k_cache", "v_cache"):
            inputs[name].zero_()
        call()
        assert seen["seqused_k"].tolist() == [n + rows for n in lens] and seen["causal"] is True
        for b, start in enumerate(lens):
            assert (seen["k"][b, start : start + rows] == 1).all()
            assert (seen["k"][b, :start] == 0).all() and (seen["k"][b, start + rows :] == 0).all()
            assert (inputs["v_cache"][b, start : start + rows] == 2).all()
    scenario = Scenario(id="x", params={"dtype": "float8_e4m3fn"})
    assert up.unsupported_reason(scenario) == "FA4 is run in bf16 only"
