"""Integrity III, class 5: honest techniques are not turned away. A kernel may time its own
variants (``<chrono>``'s clocks, CUDA events on the current stream) and, on the GPU, encode TMA
tensor maps through the driver (``cuTensorMapEncode*`` and the error strings, no other driver
function). GPU kernels are compiled to objects here (no GPU, a CPU torch) and judged by the
same static checks as in a build; on the H200 they run in ``tests/gpu/test_fa3_cheats.py``."""

from pathlib import Path

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.building.cuda_driver import driver_link_flags, installed_driver, toolkit_stub
from evals.harness.static.static_checks import check_includes, check_symbols
from evals.harness.static.symbol_rules import (
    COMMON_ALLOWED_SYMBOLS,
    CUDA_ALLOWED_SYMBOLS,
    CUDA_DRIVER_ALLOWED_SYMBOLS,
    OPENMP_ALLOWED_SYMBOLS,
    first_unallowed,
)
from evals.harness.targets import get_target
from tests.cuda_objects import compile_candidate, needs_nvcc
from tests.helpers import BUILD_CACHE, CPU_KERNELS, ROOT, check_held, failures_of

CPU = COMMON_ALLOWED_SYMBOLS + OPENMP_ALLOWED_SYMBOLS
GPU = COMMON_ALLOWED_SYMBOLS + CUDA_ALLOWED_SYMBOLS + CUDA_DRIVER_ALLOWED_SYMBOLS
GPU_KERNELS = ROOT / "tests" / "data" / "fa3_hopper"
CLOCKS = ["std::chrono::_V2::steady_clock::now()", "std::chrono::_V2::system_clock::now()"]
ENCODERS = [
    "cuTensorMapEncodeTiled",
    "cuTensorMapEncodeIm2col",
    "cuTensorMapEncodeIm2colWide",
    "cuTensorMapReplaceAddress",
    "cuGetErrorString",
    "cuGetErrorName",
]
EVENTS = [
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaEventSynchronize",
    "cudaEventElapsedTime",
    "cudaEventDestroy",
]


def test_clocks_are_allowed_on_both_targets_and_sleeping_or_threads_are_not():
    assert first_unallowed(CLOCKS, CPU) is None and first_unallowed(CLOCKS, GPU) is None
    for bad in [
        "nanosleep",
        "clock_nanosleep",
        "usleep",
        "sleep",
        "clock_gettime",
        "std::this_thread::sleep_for(std::chrono::duration<long, std::ratio<1l, 1l> >)",
        "std::chrono::_V2::system_clock::to_time_t(long)",
        "time",
        "localtime",
        "pthread_create",
    ]:
        assert first_unallowed([bad], CPU) == bad, bad
        assert first_unallowed([bad], GPU) == bad, bad


def test_tma_encoders_and_events_are_allowed_on_the_gpu_and_no_other_driver_function():
    assert first_unallowed(ENCODERS + EVENTS, GPU) is None
    for bad in [
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuStreamCreate",
        "cuCtxCreate_v4",
        "cuModuleLoadData",
        "cuLibraryLoadData",
        "cuMemAlloc_v2",
        "cuMemcpyHtoD_v2",
        "cuGetProcAddress_v2",
        "cuInit",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cudaGetDriverEntryPoint",
        "cudaGetDriverEntryPointByVersion",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaStreamWaitEvent",
    ]:
        assert first_unallowed([bad], GPU) == bad, bad
    for name in ENCODERS + EVENTS:  # the CPU target has no GPU at all
        assert first_unallowed([name], CPU) == name


def test_the_driver_header_is_allowed_on_the_gpu_only():
    ok = "#include <cuda.h>\n#include <cuda_runtime.h>\n"
    assert check_includes(ok, get_target("fa3_hopper").policy) is None
    bad = check_includes("#include <cudaTypedefs.h>\n", get_target("fa3_hopper").policy)
    assert bad is not None and bad.code == Code.FORBIDDEN_INCLUDE
    cpu = check_includes("#include <cuda.h>\n", get_target("cpu_attention").policy)
    assert cpu is not None and cpu.code == Code.FORBIDDEN_INCLUDE


def test_driver_library_is_found_installed_first_then_the_toolkit_stub(tmp_path, monkeypatch):
    import evals.harness.building.cuda_driver as cd

    monkeypatch.setattr(cd, "_DRIVER_DIRS", ())
    monkeypatch.setattr(cd, "_loader_cache_entry", lambda: None)
    monkeypatch.setenv("LD_LIBRARY_PATH", "")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(cd, "_STUB_DIRS", ("lib64/stubs",))
    assert installed_driver() is None and toolkit_stub() is None
    stub = tmp_path / "cuda" / "lib64" / "stubs" / "libcuda.so"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(b"\x7fELF\x02")
    assert toolkit_stub() == stub
    driver_link_flags.cache_clear()
    try:
        assert driver_link_flags() == (f"-L{stub.parent}", "-lcuda")
        lib = tmp_path / "driver"
        lib.mkdir()
        (lib / "libcuda.so.1").write_bytes(b"\x7fELF\x01")  # 32-bit: skipped
        monkeypatch.setenv("LD_LIBRARY_PATH", str(lib))
        driver_link_flags.cache_clear()
        assert driver_link_flags() == (f"-L{stub.parent}", "-lcuda")
        (lib / "libcuda.so.1").write_bytes(b"\x7fELF\x02")
        driver_link_flags.cache_clear()
        assert driver_link_flags() == (str(lib / "libcuda.so.1"),)
    finally:
        driver_link_flags.cache_clear()


def test_the_loader_cache_gives_the_64_bit_driver(tmp_path, monkeypatch):
    from evals.harness.building.cuda_driver import _loader_cache_entry

    fake = tmp_path / "ldconfig"
    fake.write_text(
        "#!/bin/sh\necho '2 libs found in cache'\n"
        "printf '\\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\\n'\n"
        "printf '\\tlibcuda.so.1 (libc6,x86-64) => /drv/libcuda.so.1\\n'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _loader_cache_entry() == Path("/drv/libcuda.so.1")


def test_fa3_build_links_the_driver_where_one_is_found():
    flags = get_target("fa3_hopper").build.extra_ldflags
    assert flags == driver_link_flags()
    if installed_driver() is None and toolkit_stub() is None:
        assert flags == ()  # nothing to link: kernels that call no driver function still load


def test_cpu_kernel_timing_its_own_variants_passes_every_check():
    verdict = evaluate(
        RunSettings("bench", "cpu_attention", CPU_KERNELS / "honest_autotune.cpp", suite="smoke")
    )
    assert verdict.status == "ok", failures_of(verdict)
    doc = verdict.to_json()
    assert doc["checks"]["includes"] == "passed"
    assert doc["checks"]["symbols"].startswith("passed: "), doc["checks"]
    for sc in doc["scenarios"]:
        assert all(check_held(sc, name) for name in sc["checks"]), sc["checks"]


def _static_checks(name: str) -> tuple[object, str]:
    library = compile_candidate(GPU_KERNELS / name, BUILD_CACHE)
    return check_symbols(library, get_target("fa3_hopper").policy)


@needs_nvcc
@pytest.mark.long  # two sm_90a builds, about a minute quiet: the second tier
@pytest.mark.parametrize("name", ["honest_tma.cu", "honest_autotune.cu"])
def test_honest_gpu_kernels_pass_the_static_checks(name):
    failure, finding = _static_checks(name)
    assert failure is None, failure
    assert finding.startswith("passed: ") and "all allowed" in finding, finding
    assert "no system-call instructions" in finding


@pytest.mark.long  # an sm_90a build, over a minute beside two hogs
@needs_nvcc
def test_a_driver_function_beyond_the_encoders_is_a_forbidden_symbol():
    failure, _ = _static_checks("driver_launch.cu")
    assert failure is not None and failure.code == Code.FORBIDDEN_SYMBOL, failure
    assert "outside the target's allow-list: cuLaunchKernel" in failure.reason, failure


def test_honest_kernels_say_what_they_are():
    for path in [
        GPU_KERNELS / "honest_tma.cu",
        GPU_KERNELS / "honest_autotune.cu",
        CPU_KERNELS / "honest_autotune.cpp",
    ]:
        assert Path(path).read_text().startswith("// Honest"), path


@needs_nvcc
def test_what_fa3_uses_passes_the_static_checks():
    # a tensor map, a cluster launch, setmaxnreg, TMA multicast, events and a steady clock
    failure, finding = _static_checks("fa3_techniques.cu")
    assert failure is None, failure
    assert "all allowed" in finding, finding
