"""``python -m evals.questioner_demo``: every decision point of the human questioner, offline.

A scripted agent (mockllm outputs, no API key, no GPU) runs the ``kernelseek`` arm on
``cpu_attention``'s smoke suite, local sandbox, with Inspect's ACP server on, and meets each
decision point in turn. Attach from another terminal with ``inspect acp``, pick the sample, and a
form asks you for a question at each one:

1. it benches a kernel made 4x slower than the start kernel (its first best);
2. it claims "the hardware limit" (``limit_claim``);
3. it benches the start kernel again: 4x over its best (``suspicious_gain``);
4. it benches the slow kernel again: no new best (``stall``, after one bench here);
5. it submits a kernel with twice the softmax scale (``failed_claim``: wrong outputs);
6. it submits the start kernel (accepted), and the final kernel is scored.

Your questions reach the agent as user messages (logged with ``source: human``); the scripted
agent does not read them. Without a person each point waits ``--wait-s`` seconds, then goes on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput
from inspect_ai.util import DisplayType

from evals.bench.arms import kernelseek
from evals.bench.config.targets import bench_target
from evals.heartbeat import heartbeat
from evals.replay import replay_model, text, tool_call, write_file

TARGET = "cpu_attention"
LIMIT_CLAIM = "I believe we are at the hardware limit of this CPU."
_IMPL = 'm.impl("attention_forward", &attention_forward);'
_WRAPPER = """namespace {{
// A variant for the questioner demo, calling the start kernel's own function.
at::Tensor demo_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        bool causal, double softmax_scale) {{
{body}
}}
}}  // namespace

"""
SLOW = """  at::Tensor out;
  for (int i = 0; i < 4; ++i) out = attention_forward(q, k, v, causal, softmax_scale);
  return out;"""
"""Four calls for one: a kernel 4x slower than the start kernel, still correct."""
WRONG = "  return attention_forward(q, k, v, causal, 2 * softmax_scale);"
"""Attention at twice the softmax scale: wrong outputs, so verification fails."""


def variant(start: str, body: str) -> str:
    """The start kernel with its registered entry point replaced by a wrapper running ``body``.

    Raises:
        ValueError: The start kernel no longer registers ``attention_forward`` as expected.
    """
    head, sep, tail = start.partition("TORCH_LIBRARY(")
    if not sep or _IMPL not in tail:
        raise ValueError(f"the {TARGET} start kernel no longer registers: {_IMPL}")
    impl = _IMPL.replace("&attention_forward", "&demo_forward")
    return head + _WRAPPER.format(body=body) + sep + tail.replace(_IMPL, impl)


def script(kernel_file: str, start: str) -> list[ModelOutput]:
    """The scripted agent: each step's comment names the decision point it meets."""
    slow, wrong = variant(start, SLOW), variant(start, WRONG)
    return [
        write_file(slow, kernel_file),
        tool_call("bench"),  # a first best
        text(LIMIT_CLAIM),  # limit_claim
        write_file(start, kernel_file),
        tool_call("bench"),  # 4x over the best: suspicious_gain
        write_file(slow, kernel_file),
        tool_call("bench"),  # no new best: stall
        write_file(wrong, kernel_file),
        tool_call("submit"),  # failed_claim
        write_file(start, kernel_file),
        tool_call("submit"),  # accepted; the score follows
    ]


def run(
    *, wait_s: float, acp_server: bool | str, log_dir: str, display: DisplayType = "full"
) -> bool:
    """Run the demo eval; whether its log's status is ``success``."""
    descriptor = bench_target(TARGET)
    start = descriptor.start().read_text()
    settings = {"suite": "smoke", "score_suite": "smoke", "sandbox": "local"}
    solver = kernelseek(wait_s=wait_s, stall_bench_calls=1, attempts=2)
    model = replay_model(script(descriptor.kernel_file, start))
    [log] = inspect_eval(
        f"evals/{TARGET}",  # the packaged task file, as the inspect_ai entry point names it
        task_args=settings,
        solver=solver,
        model=model,
        acp_server=acp_server,
        log_dir=log_dir,
        display=display,
    )
    return log.status == "success"


def main(argv: list[str] | None = None) -> int:
    """Run the demo; exit status 0 when the eval succeeded."""
    parser = argparse.ArgumentParser(prog="python -m evals.questioner_demo", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--wait-s", type=float, default=60.0, help="seconds to wait per form")
    parser.add_argument("--log-dir", default="./logs", help="where the eval log goes")
    parser.add_argument(
        "--acp-server",
        default="true",
        metavar="PATH|PORT|true",
        help="Inspect's ACP server address (default: its own socket, found by inspect acp)",
    )
    args = parser.parse_args(argv)
    acp: bool | str = True if args.acp_server == "true" else args.acp_server
    print(
        f"attach from another terminal: inspect acp (then pick the sample); each of the 5 "
        f"decision points waits {args.wait_s:g} s for your question, then goes on",
        flush=True,
    )
    with heartbeat("questioner demo", log_dir=Path(args.log_dir)):
        ok = run(wait_s=args.wait_s, acp_server=acp, log_dir=args.log_dir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
