"""Integrity II (A): allow-lists instead of deny-lists. The symbols a candidate adds to a
trivial kernel's must be on its target's allow-list; includes are judged on the
preprocessor's own list; raw system-call instructions are found in the disassembly."""

import shutil
import subprocess
from pathlib import Path

import pytest

from evals.harness.building.compile_command import CompileCommand, read_compile_command
from evals.harness.static.include_scan import included_headers, parse_header_tree, spell
from evals.harness.static.symbol_rules import (
    COMMON_ALLOWED_SYMBOLS,
    CUDA_ALLOWED_SYMBOLS,
    OPENMP_ALLOWED_SYMBOLS,
    first_unallowed,
    qualified_name,
)
from evals.harness.static.syscalls import syscall_instructions

CPU = COMMON_ALLOWED_SYMBOLS + OPENMP_ALLOWED_SYMBOLS
GPU = COMMON_ALLOWED_SYMBOLS + CUDA_ALLOWED_SYMBOLS


@pytest.mark.parametrize(("symbol", "name"), [
    ("float* at::TensorBase::data_ptr<float>() const", "at::TensorBase::data_ptr<float>"),
    ("std::ostream& std::ostream::_M_insert<long>(long)", "std::ostream::_M_insert<long>"),
    ("operator new(unsigned long)", "operator_new"),
    ("operator delete[](void*)", "operator_delete[]"),
    ("at::cpu::bmm(at::Tensor const&, at::Tensor const&)", "at::cpu::bmm"),
    ("typeinfo for c10::Error", "typeinfo for c10::Error"),
    ("expf", "expf"),
    ("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
     "(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
     "std::operator@<std::char_traits<char> >"),
])
def test_qualified_name_strips_return_type_and_arguments(symbol, name):
    assert qualified_name(symbol) == name


@pytest.mark.parametrize("symbol", [
    "at::cpu::bmm(at::Tensor const&, at::Tensor const&)",
    "at::native::scaled_dot_product_attention(at::Tensor const&, at::Tensor const&)",
    "at::compositeimplicitautograd::matmul(at::Tensor const&, at::Tensor const&)",
    "at::compositeexplicitautograd::bmm(at::Tensor const&, at::Tensor const&)",
    "at::launch(std::function<void ()>)",
    "at::set_num_threads(int)",
    "at::set_num_interop_threads(int)",
    "omp_set_num_threads",
    "omp_set_dynamic",
    "c10::ThreadPool::run(std::function<void ()>)",
    "std::__future_base::_State_baseV2::_M_do_set()",
    "pthread_attr_init",
    "clone3",
    "syscall",
    "c10::Dispatcher::findSchemaOrThrow(char const*, char const*)",
    "sched_setaffinity",
    "nanosleep",
])
def test_cpu_allow_list_refuses_ways_a_deny_list_missed(symbol):
    assert first_unallowed([symbol], CPU) == symbol


@pytest.mark.parametrize("symbol", [
    "expf", "_ZGVdN8v_expf", "__expf_finite", "memcpy", "operator new(unsigned long)",
    "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads",
    "c10::BFloat16* at::TensorBase::data_ptr<c10::BFloat16>() const",
    "c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)",
    "at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)",
    "std::__throw_out_of_range_fmt(char const*, ...)",
    "at::internal::invoke_parallel(long, long, long, std::function<void (long, long)> const&)",
    "at::get_num_threads()",
    "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
    "(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
    "std::cout", "__atomic_load_16", "__truncsfbf2", "__mulsc3",
])
def test_cpu_allow_list_keeps_what_kernels_need(symbol):
    assert first_unallowed([symbol], CPU) is None


def test_cuda_allow_list_keeps_launches_and_refuses_driver_lookups_and_pools():
    assert first_unallowed(["cudaLaunchKernel", "cudaFuncSetAttribute", "__cudaRegisterFunction",
                            "c10::cuda::getCurrentCUDAStream(signed char)"], GPU) is None
    for bad in ["cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
                "c10::cuda::getStreamFromPool(bool, signed char)", "cudaMallocHost",
                "cuLaunchKernel", "at::cuda::getCurrentCUDABlasHandle()", "cudaStreamCreate"]:
        assert first_unallowed([bad], GPU) == bad, bad


def test_header_tree_keeps_depth_one_headers_spelled_by_the_deepest_search_dir(tmp_path):
    stderr = (
        "#include <...> search starts here:\n /usr/include/c++/12\n /usr/include\n"
        "End of search list.\n"
        ". /usr/include/c++/12/fstream\n.. /usr/include/c++/12/istream\n"
        f". {tmp_path}/answers.h\n"
    )
    dirs, direct = parse_header_tree(stderr)
    assert [d.as_posix() for d in dirs][-1] == "/usr/include"
    assert [spell(h, dirs) for h in direct] == ["fstream", f"{tmp_path}/answers.h"]


@pytest.mark.skipif(shutil.which("c++") is None, reason="needs a C++ compiler")
def test_preprocessor_sees_includes_that_no_literal_include_line_shows(tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text("#include <cmath>\n#define H <fstream>\n#include H\n%:include <future>\n"
                   "#inc\\\nlude <map>\n")
    cmd = CompileCommand("c++", ("-std=c++17",), (), src, cuda=False)
    headers = included_headers(cmd)
    assert {"cmath", "fstream", "future", "map"} <= set(headers)


def test_compile_command_is_read_from_the_build_directory(tmp_path):
    (tmp_path / "build.ninja").write_text(
        "cxx = c++\ncflags = -DTORCH_EXTENSION_NAME=ks_1 -isystem /x -O3\npost_cflags = \n"
        "rule compile\n  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags\n"
        "build candidate.o: compile /b/src/candidate.cpp\n")
    cmd = read_compile_command(tmp_path)
    assert cmd is not None and not cmd.cuda and cmd.source == Path("/b/src/candidate.cpp")
    assert cmd.flags == ("-DTORCH_EXTENSION_NAME=ks_1", "-isystem", "/x", "-O3")
    assert "ks_1" not in cmd.identity()  # the trivial kernel's cache key is shared


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("objdump") is None,
                    reason="needs a C compiler and objdump")
def test_disassembly_finds_raw_system_calls_and_nothing_in_plain_code(tmp_path):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("x86-64 inline assembly")
    raw, plain = tmp_path / "raw.c", tmp_path / "plain.c"
    raw.write_text('long f(void) { long r; __asm__ volatile("syscall" : "=a"(r) : "a"(39) '
                   ': "rcx", "r11", "memory"); return r; }\n')
    plain.write_text("#include <string.h>\nvoid g(char* a, const char* b) { memcpy(a, b, 9); }\n")
    for c in (raw, plain):
        subprocess.run(["cc", "-O2", "-c", str(c), "-o", str(c.with_suffix(".o"))], check=True)
    assert any("syscall" in line for line in syscall_instructions(raw.with_suffix(".o")))
    assert syscall_instructions(plain.with_suffix(".o")) == []
