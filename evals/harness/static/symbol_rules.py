"""Allow-lists of what a candidate may add to a trivial kernel's undefined symbols.

A deny-list misses every way in it does not name (``at::cpu::``, ``at::native::``, the
composite namespaces, ``at::launch``, ``c10::ThreadPool``, ``omp_set_num_threads``, ...);
an allow-list names what an attention kernel legitimately needs and nothing else: tensor
accessors, torch's error machinery, allocation and view operators (``at::_ops``, judged by
operator name), libm, memory and string functions, the C++ runtime, OpenMP's construct
helpers and thread-number getters, the monotonic clocks a kernel times its own variants with,
and on the GPU the CUDA launch and event API and the driver's TMA tensor-map encoders. Rules
match the qualified name of the symbol (its return type and arguments stripped), from its start.
"""

from __future__ import annotations

import re

_OPERATOR = re.compile(r"operator\s*(<<=?|>>=?|<=>|<=|>=|<|>|->\*?|\(\)|\[\])")
_NEW_DELETE = re.compile(r"operator (new|delete)")
_SPECIAL = re.compile(r"^(typeinfo name|typeinfo|vtable|VTT|guard variable) for ")

COMMON_ALLOWED_SYMBOLS: tuple[str, ...] = (
    # tensors: accessors, metadata, torch's checks and errors
    r"at::_ops::\w+::(call|redispatch)$",
    r"at::(TensorBase|Tensor)::",
    r"c10::detail::(torchCheckFail|torchInternalAssertFail|torchCheckMsgImpl|maybe_wrap_dim_slow"
    r"|_str)",
    r"c10::(Error|ValueError|TypeError|IndexError|NotImplementedError|Warning|WarningUtils"
    r"|ThrowEnforceNotMet|SymbolicShapeMeta|TensorImpl|UndefinedTensorImpl|SymInt|SymBool"
    r"|SymNodeImpl|intrusive_ptr_target|StorageImpl|impl::cow|Half|BFloat16|Float8_\w+|Scalar"
    r"|TensorOptions|Device|Layout|MemoryFormat|ParallelGuard)\b",
    r"c10::(warn\w*|toString|typeMetaToScalarType|get_backtrace|GetExceptionString|throw\w*Error)\b",
    r"caffe2::(TypeMeta|detail)::",
    r"at::(get_num_threads|get_thread_num|in_parallel_region|get_parallel_info|init_num_threads"
    r"|internal::(lazy_init_num_threads|set_thread_num|invoke_parallel|_parallel_run))$",
    # libm (scalar and glibc's vector variants)
    r"(__)?(exp|exp2|expm1|log|log2|log10|log1p|sqrt|cbrt|pow|fabs|fmax|fmin|fmod|floor|ceil"
    r"|round|lround|llround|rint|lrint|nearbyint|trunc|tanh|sinh|cosh|sin|cos|tan|asin|acos"
    r"|atan|atan2|erf|erfc|fma|ldexp|frexp|modf|hypot|nan|copysign|sincos)[fl]?(_finite)?$",
    r"_ZGV\w+$",
    # memory, strings, the C++ runtime
    r"(memcpy|memmove|memset|memcmp|strlen|strcmp|strncmp|__memcpy_chk|__memmove_chk"
    r"|__memset_chk|malloc|calloc|realloc|free|posix_memalign|aligned_alloc)$",
    r"operator_(new|delete)(\[\])?$",
    r"(__cxa_\w+|__gxx_personality_v0|_Unwind_Resume|__stack_chk_fail|__assert_fail"
    r"|__dso_handle|__tls_get_addr|abort|exit)$",  # exit: nvcc-built objects of honest kernels
    # libgcc and libatomic helpers the compiler emits on its own (conversions, complex math,
    # 128-bit integer division, __builtin_cpu_supports' CPU model)
    r"(__atomic_\w+|__(extend|trunc)\w+f2|__float\w+|__fix\w+|__popcount\w+"
    r"|__(mul|div)[sdxt]c3|__powi[sdx]f2|__u?(div|mod)[dt]i3|__u?mulv?[dt]i3|__muloti4"
    r"|__cpu_model|__cpu_features2|__cpu_indicator_init)$",
    # std::call_once and std::mutex (they start no thread)
    r"(pthread_once|pthread_mutex_(lock|unlock|trylock)|(std::)?__once_(proxy|callable|call))$",
    r"std::(__cxx11::)?operator@",
    r"std::(__throw_\w+|terminate|__glibcxx_assert_fail|_Hash_bytes|_Rb_tree_\w+"
    r"|__detail::_Prime_rehash_policy::|__detail::_List_node_base::|_List_node_base::"
    r"|_Sp_make_shared_tag::)",
    r"std::(__cxx11::)?(basic_string|basic_ostringstream|basic_stringstream|basic_istringstream"
    r"|basic_stringbuf|basic_ostream|basic_ios|ostream|istream|ios_base|locale|__ostream_insert"
    r"|endl|cout|cerr|clog|to_string)\b",
    r"std::(exception|runtime_error|logic_error|invalid_argument|out_of_range|length_error"
    r"|domain_error|range_error|overflow_error|underflow_error|bad_alloc|bad_array_new_length"
    r"|bad_function_call|bad_optional_access|bad_variant_access|bad_cast|bad_typeid"
    r"|__exception_ptr|current_exception|rethrow_exception|uncaught_exceptions?|ctype)\b",
    r"(typeinfo name|typeinfo|vtable|VTT) for (std::|c10::|at::|caffe2::|torch::|__cxxabiv1::)",
    # <chrono>'s clocks, to time a kernel's own variants (autotuning on first use): reading a
    # clock is all they do (high_resolution_clock is libstdc++'s system_clock)
    r"std::chrono::(_V2::)?(steady_clock|system_clock)::now$",
    # printing (diagnostics to the worker's log)
    r"(printf|puts|putchar|fputs|fputc|fprintf|fflush|fwrite|stdout|stderr|snprintf|sprintf"
    r"|vsnprintf|__printf_chk|__fprintf_chk|__snprintf_chk|__sprintf_chk)$",
)
"""Regexes on the qualified name of a symbol a candidate may add on any target."""

OPENMP_ALLOWED_SYMBOLS: tuple[str, ...] = (
    r"GOMP_\w+$",
    r"omp_(get_thread_num|get_num_threads|get_max_threads|in_parallel|get_wtime|get_num_procs"
    r"|get_level|get_team_size|get_ancestor_thread_num|get_active_level|init_lock|destroy_lock"
    r"|set_lock|unset_lock|test_lock)$",
)
"""OpenMP constructs and getters; not ``omp_set_*`` (the worker pins the thread count)."""

CUDA_ALLOWED_SYMBOLS: tuple[str, ...] = (
    r"cuda(LaunchKernel|LaunchKernelExC|LaunchKernel_ptsz|LaunchKernelExC_ptsz"
    r"|LaunchCooperativeKernel|FuncSetAttribute|FuncGetAttributes|FuncSetCacheConfig"
    r"|FuncSetSharedMemConfig|GetLastError|PeekAtLastError|GetErrorString|GetErrorName|GetDevice"
    r"|SetDevice|GetDeviceCount|GetDeviceProperties\w*|DeviceGetAttribute"
    r"|OccupancyMaxActiveBlocksPerMultiprocessor\w*|OccupancyMaxPotentialBlockSize\w*"
    r"|OccupancyMaxPotentialClusterSize|OccupancyMaxActiveClusters"
    r"|OccupancyAvailableDynamicSMemPerBlock|MemcpyAsync|MemsetAsync|Memcpy2DAsync"
    r"|Memset2DAsync|MemcpyToSymbolAsync|MemcpyFromSymbolAsync|GetSymbolAddress|GetFuncBySymbol"
    r"|DriverGetVersion|RuntimeGetVersion|StreamGetCaptureInfo\w*|StreamIsCapturing"
    r"|PointerGetAttributes)$",
    # events on the current stream (a kernel timing its own launch configurations); a host
    # wait on one is as visible to the host-issue check as any other synchronisation
    r"cudaEvent(Create|CreateWithFlags|Record|RecordWithFlags|Record_ptsz|RecordWithFlags_ptsz"
    r"|Synchronize|ElapsedTime|ElapsedTime_v2|Query|Destroy)$",
    r"__cuda(RegisterFunction|RegisterFatBinary|RegisterFatBinaryEnd|UnregisterFatBinary"
    r"|PushCallConfiguration|PopCallConfiguration|RegisterVar|RegisterManagedVar|RegisterTexture"
    r"|RegisterSurface|InitModule|RegisterLinkedBinary\w*)$",
    r"__fatbinwrap\w*$",
    r"__nv_\w+$",
    r"c10::cuda::(getCurrentCUDAStream|getDefaultCUDAStream|c10_cuda_check_implementation"
    r"|ExchangeDevice|MaybeSetDevice|SetDevice|GetDevice|set_device|current_device|device_count"
    r"|device_count_ensure_non_zero|warp_size|CUDAKernelLaunchRegistry|CUDAStream::"
    r"|get_cuda_check_suffix|impl::CUDAGuardImpl)\b",
    r"at::cuda::(getCurrentCUDAStream|getDefaultCUDAStream|getCurrentDeviceProperties"
    r"|getDeviceProperties|warp_size)\b",
    r"c10::impl::(device_guard_impl_registry|getDeviceGuardImpl|VirtualGuardImpl"
    r"|InlineDeviceGuard|DeviceGuardImplInterface)\b",
    r"c10::(DeviceGuard|Stream|StreamGuard|DeviceTypeName)\b",
)
"""What a CUDA candidate may add: the launch and event API, not driver entry points (no
``cudaGetDriverEntryPoint``: it hands out any driver function by name) nor stream pools."""

CUDA_DRIVER_ALLOWED_SYMBOLS: tuple[str, ...] = (
    r"cu(TensorMapEncodeTiled|TensorMapEncodeIm2col|TensorMapEncodeIm2colWide"
    r"|TensorMapReplaceAddress|GetErrorString|GetErrorName)$",
)
"""The driver functions a CUDA candidate may call (it is linked against the driver library,
``-lcuda``): the TMA tensor-map encoders, which only fill a 128-byte descriptor in host memory,
and the driver's error strings. Every other driver function (launches, streams, contexts,
modules, memory, ``cuGetProcAddress``) stays outside the allow-list."""


def qualified_name(symbol: str) -> str:
    """The qualified name of a demangled symbol, without return type, arguments or qualifiers.

    ``float* at::TensorBase::data_ptr<float>() const`` is ``at::TensorBase::data_ptr<float>``;
    ``operator new(unsigned long)`` is ``operator_new``; ``typeinfo for c10::Error`` is kept.
    """
    if _SPECIAL.match(symbol):
        return symbol
    text = _NEW_DELETE.sub(r"operator_\1", _OPERATOR.sub("operator@", symbol))
    text = text.replace("operator@ <", "operator@<")  # an operator template's arguments
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            text = text[:i]
            break
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1
    return text[start:]


def first_unallowed(symbols: list[str], allowed: tuple[str, ...]) -> str | None:
    """The first symbol whose qualified name no rule of ``allowed`` matches, or None."""
    rules = [re.compile(p) for p in allowed]
    for sym in symbols:
        name = qualified_name(sym)
        if not any(rule.match(name) for rule in rules):
            return sym
    return None
