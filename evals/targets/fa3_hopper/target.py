"""The ``fa3_hopper`` target: a one-file CUDA attention kernel for Hopper vs FlashAttention-3.

Contract: ``kernels/fa3_hopper/CONTRACT.md``. Suites: 26 dev and 182 full scenarios
(``scripts/make_fa3_suites.py``). Upstreams: FA3, and torch SDPA with cuDNN and FA2 backends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch

from evals.harness.building.cuda_driver import driver_link_flags
from evals.harness.measurement.gpu import (
    Ceilings,
    CudaEventTimer,
    cuda_device_key,
    describe_cuda_device,
    device_state,
    measure_ceilings,
)
from evals.harness.measurement.timing import Timer, TimingSettings
from evals.harness.scenarios import Scenario
from evals.harness.static.symbol_baseline import trivial_source
from evals.harness.static.symbol_rules import (
    COMMON_ALLOWED_SYMBOLS,
    CUDA_ALLOWED_SYMBOLS,
    CUDA_DRIVER_ALLOWED_SYMBOLS,
)
from evals.harness.targets.attention import cut_heads
from evals.harness.targets.base import (
    AccuracyRule,
    BuildSpec,
    Contract,
    Inputs,
    OutputSpec,
    Target,
    Upstream,
    Work,
    WorkerLimits,
)
from evals.harness.targets.draw_space import DrawSpace
from evals.harness.targets.guards import MutationCheck
from evals.harness.targets.source_policy import STD_HEADERS, TORCH_HEADERS, SourcePolicy
from evals.targets import target_folder
from evals.targets.fa3_hopper import draw as fa3_draw
from evals.targets.fa3_hopper import problem
from evals.targets.fa3_hopper.upstreams import fa3_upstreams, import_fa3

NAMESPACE = "kernelseek"
DENSE_SCHEMA = (
    "flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
    "int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, "
    "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor"
)
KVCACHE_SCHEMA = (
    "flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, "
    "Tensor cache_seqlens, Tensor? k_new, Tensor? v_new, Tensor? q_descale, Tensor? k_descale, "
    "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor"
)


def nvcc_flags(arch: str) -> tuple[str, ...]:
    """Nvcc flags of a one-file candidate built for ``arch`` (``sm_90a``, ``sm_100a``)."""
    number = arch.removeprefix("sm_")
    return (
        "-O3",
        f"-gencode=arch=compute_{number},code={arch}",
        "-std=c++17",
        "--expt-relaxed-constexpr",
        "-lineinfo",
    )


CUDA_HEADERS = (
    r"(cuda|cuda_(runtime|runtime_api|bf16|fp16|fp8|pipeline|pipeline_primitives|awbarrier"
    r"|awbarrier_primitives|awbarrier_helpers)|mma|math_constants|device_launch_parameters"
    r"|device_functions|vector_types|vector_functions|driver_types|builtin_types|host_defines"
    r"|sm_\d+_intrinsics)\.h(pp)?"
)
"""The CUDA toolkit's own language headers and the driver API's declarations (``cuda.h``: the
symbol check allows only its tensor-map encoders and error strings); not libraries (cuBLAS,
cuDNN, cuRAND, CUPTI, NVML, ...)."""


def cuda_source_policy(target: str) -> SourcePolicy:
    """What a one-file CUDA candidate of ``target`` may include and add to its trivial kernel."""
    return SourcePolicy(
        allowed_includes=(
            STD_HEADERS,
            *TORCH_HEADERS,
            CUDA_HEADERS,
            r"cooperative_groups(/[a-z_]+)?\.h",
            r"cuda/[a-z_]+(/[a-z_]+)*",
            r"ATen/cuda/(CUDAContext|Exceptions)\.h",
            r"c10/cuda/CUDA(Guard|Stream|Exception)\.h",
        ),
        trivial_kernel=trivial_source(target, ".cu"),
        allowed_symbols=COMMON_ALLOWED_SYMBOLS + CUDA_ALLOWED_SYMBOLS + CUDA_DRIVER_ALLOWED_SYMBOLS,
    )


class Fa3Hopper(Target):
    """Attention forward on Hopper (sm_90a): dense, varlen and KV-cache; bf16 and fp8."""

    def __init__(
        self,
        *,
        name: str = "fa3_hopper",
        arch: str = "sm_90a",
        accuracy: AccuracyRule | None = None,
        upstreams: tuple[Upstream, ...] | None = None,
    ) -> None:
        """FA3's target; a target with the same problem (fa4_blackwell) passes its own parts.

        Args:
            name: The target's name (its folder's, its contract's ``kernels/<name>/``).
            arch: The architecture the candidate is built for.
            accuracy: Default: within 2x FA3's error, bf16 and fp8.
            upstreams: Default: FA3, cuDNN and FA2.
        """
        super().__init__(
            name=name,
            device="cuda",
            contract=Contract(
                namespace=NAMESPACE,
                entry_points={
                    "flash_forward": DENSE_SCHEMA,
                    "flash_forward_kvcache": KVCACHE_SCHEMA,
                },
                source_suffix=".cu",
                document=f"kernels/{name}/CONTRACT.md",
            ),
            build=BuildSpec(
                extra_cflags=("-O3",),
                extra_cuda_cflags=nvcc_flags(arch),
                extra_ldflags=driver_link_flags(),  # for the TMA encoders (symbol_rules)
                with_cuda=True,
                timeout_s=600.0,
            ),
            accuracy=accuracy
            or AccuracyRule(baseline="fa3", floors={"bfloat16": 2e-3, "float8_e4m3fn": 2e-3}),
            timing=TimingSettings(
                warmup=2,
                min_trials=10,
                max_trials=100,
                time_cap_s=1.0,
                fresh_queries=True,
                gated_wall=True,
            ),
            limits=WorkerLimits(call_timeout_s=120.0),
            upstreams=fa3_upstreams() if upstreams is None else upstreams,
            policy=cuda_source_policy(name),
            host_issue=target_folder(name).host_issue,
        )

    def missing_upstream(self) -> str | None:
        """Why FA3, the accuracy baseline, cannot be imported here, or None."""
        try:
            import_fa3()
        except Exception as exc:  # ImportError, or a broken install (missing CUDA libraries)
            return (
                f"no FlashAttention-3: {type(exc).__name__}: {exc} (pip install fa3-fwd==0.0.3, "
                "or a full build's flash_attn_interface)"
            )
        return None

    def params(self, scenario: Scenario) -> problem.Fa3Params:
        """Typed parameters of ``scenario``."""
        return problem.Fa3Params.from_params(scenario.params)

    def make_inputs(self, scenario: Scenario, seed: int) -> Inputs:
        """Random inputs on the GPU from a seeded CUDA generator."""
        return problem.make_inputs(self.params(scenario), seed)

    def mutable_inputs(self, scenario: Scenario) -> Mapping[str, MutationCheck]:
        """The KV cache when new keys and values are appended to it, with the append's check."""
        if not self.params(scenario).append:
            return {}
        return {"k_cache": problem.check_append, "v_cache": problem.check_append}

    def make_timing_inputs(self, scenario: Scenario, seeds: list[int]) -> list[Inputs]:
        """Timing sets; KV-cache scenarios share one cache (see ``problem``)."""
        return list(problem.make_timing_inputs(self.params(scenario), seeds))

    def refill_query(self, scenario: Scenario, inputs: Inputs, seed: int) -> None:
        """Fresh standard-normal q from ``seed`` in the same buffer (fp8: the set's descale)."""
        problem.refill_query(self.params(scenario), inputs, seed)

    def draw_contract(self, space: DrawSpace) -> tuple[str, dict[str, Any]]:
        """A small drawn contract scenario (``draw``)."""
        return fa3_draw.draw_params(space)

    def value_scale(self, scenario: Scenario) -> float:
        """The scenario's ``v_std``."""
        return self.params(scenario).v_std

    def rewrite_kv_part(self, scenario: Scenario, inputs: Inputs, seed: int) -> None:
        """A few rows of one KV head of k and v (or the cache) rewritten in place."""
        fa3_draw.rewrite(self.params(scenario), inputs, seed)

    def expected_output(self, scenario: Scenario) -> OutputSpec:
        """bf16, shaped like q, on the GPU."""
        p = self.params(scenario)
        if p.kind == "varlen":
            shape: tuple[int, ...] = (sum(p.seqlens), p.heads_q, p.head_dim)
        else:
            shape = (p.batch, p.seqlen_q, p.heads_q, p.head_dim)
        return OutputSpec(shape=shape, dtype=torch.bfloat16, device="cuda")

    def prepare_candidate(self, ops: Any, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """Callable invoking ``flash_forward`` or ``flash_forward_kvcache``."""
        i = inputs
        tail = (
            i.get("q_descale"),
            i.get("k_descale"),
            i.get("v_descale"),
            i["causal"],
            i["softmax_scale"],
        )
        if "k_cache" in i:
            op = ops.flash_forward_kvcache
            return lambda: op(
                i["q"],
                i["k_cache"],
                i["v_cache"],
                i["cache_seqlens"],
                i["k_new"],
                i["v_new"],
                *tail,
            )
        dense = ops.flash_forward
        if "cu_seqlens" in i:
            cu, ms = i["cu_seqlens"], i["max_seqlen"]
            cu_k, ms_k = i.get("cu_seqlens_k", cu), i.get("max_seqlen_k", ms)
            return lambda: dense(
                i["q"],
                i["k"],
                i["v"],
                cu,
                cu_k,
                ms,
                ms_k,
                None,
                None,
                None,
                i["causal"],
                i["softmax_scale"],
            )
        sq, sk = i["q"].shape[1], i["k"].shape[1]
        return lambda: dense(i["q"], i["k"], i["v"], None, None, sq, sk, *tail)

    def heads(self, scenario: Scenario) -> tuple[int, int]:
        """(query heads, KV heads)."""
        p = self.params(scenario)
        return p.heads_q, p.heads_kv

    def head_block(self, scenario: Scenario, inputs: Inputs, kv: slice) -> tuple[Scenario, Inputs]:
        """The scenario and inputs of the KV heads ``kv`` and their query heads (views).

        fp8 descales are per (batch, KV head), so they are cut with the KV heads.
        """
        p = self.params(scenario)
        group = p.heads_q // p.heads_kv
        n = kv.stop - kv.start
        params = {**scenario.params, "heads_q": n * group, "heads_kv": n}
        return replace(scenario, params=params), cut_heads(inputs, kv, group)

    def reference(self, scenario: Scenario, inputs: Inputs) -> torch.Tensor:
        """Float64 attention (of the dequantised inputs for fp8)."""
        return problem.reference(self.params(scenario), inputs)

    def work(self, scenario: Scenario) -> Work:
        """FLOPs over attended pairs and bytes of q, k, v and out (mean cache length)."""
        flops, nbytes = problem.work(self.params(scenario))
        return Work(flops=flops, bytes=nbytes)

    def floor_us(self, scenario: Scenario, ceilings: Ceilings) -> float:
        """The least plausible time: shortest cache, measured matmul and copy ceilings."""
        p = self.params(scenario)
        flops, nbytes = problem.work(p, lower_bound=True)
        return ceilings.floor_us(flops, nbytes, fp8=p.fp8)

    def measure_ceilings(self) -> Ceilings:
        """Matmul and copy ceilings of this GPU, measured now."""
        return measure_ceilings()

    def timer(self) -> Timer:
        """CUDA events around each call, L2 flushed and the device idle before it."""
        return CudaEventTimer()

    def device_key(self) -> str:
        """The current CUDA device, by UUID (stable across processes and containers)."""
        return cuda_device_key()

    def device_state(self) -> dict[str, Any]:
        """SM clock, temperature, memory and power from nvidia-smi."""
        return device_state()

    def describe_device(self) -> dict[str, Any]:
        """GPU name, SMs, L2, memory, driver."""
        return describe_cuda_device() if torch.cuda.is_available() else {"name": None}
