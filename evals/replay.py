"""An offline, scripted agent for Inspect: mockllm outputs that carry token usage.

Inspect's ``mockllm/model`` answers with outputs that carry no usage, so Inspect counts tokens
with a tokenizer it downloads (fails offline). These outputs set ``usage``, and
:func:`replay_model` replays the same script from the start in every sample (epoch), so
concurrent epochs each see the whole script. Use it to push a given kernel through the real
task, stop condition and scorer (pipeline checks, the first rows of a new host), or to meet
every decision point of the questioner (:mod:`evals.questioner_demo`):

    from inspect_ai import eval
    from evals.replay import replay_model, submit_kernel
    eval("tasks/cpu_attention", model=replay_model(submit_kernel("my.cpp", "kernel.cpp")),
         epochs=3, task_args={"suite": "smoke", "score_suite": "smoke"})
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from inspect_ai.log import transcript
from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model

MODEL = "mockllm/model"
USAGE = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
_EOF = "KERNELSEEK_REPLAY_EOF"


def tool_call(tool: str, **arguments: Any) -> ModelOutput:
    """A model output that calls ``tool`` with ``arguments`` (usage set)."""
    out = ModelOutput.for_tool_call(model=MODEL, tool_name=tool, tool_arguments=arguments)
    out.usage = USAGE
    return out


def text(content: str) -> ModelOutput:
    """A model output with text only (usage set)."""
    out = ModelOutput.from_content(model=MODEL, content=content)
    out.usage = USAGE
    return out


def write_file(source: str, path: str) -> ModelOutput:
    """A ``bash`` call writing ``source`` to the workspace's ``path`` (any sandbox).

    Raises:
        ValueError: ``source`` contains the heredoc's end marker.
    """
    if _EOF in source:
        raise ValueError(f"the source contains the heredoc marker {_EOF}")
    return tool_call("bash", command=f"cat > {path} <<'{_EOF}'\n{source}\n{_EOF}\n")


def submit_kernel(kernel: str | Path, kernel_file: str) -> list[ModelOutput]:
    """Write ``kernel``'s source into the workspace's ``kernel_file`` (any sandbox), submit."""
    return [write_file(Path(kernel).read_text(), kernel_file), tool_call("submit")]


def replay_model(
    outputs: list[ModelOutput], *, then: Literal["raise", "repeat"] = "raise"
) -> Model:
    """A mockllm model that replays ``outputs`` from the start in each sample.

    Args:
        outputs: The script.
        then: Past the script's end: ``raise``, or ``repeat`` its last output (a scripted agent
            that keeps submitting, for arms that ask more after a submission: a question at
            a decision point).

    Raises:
        ValueError: (inside a sample, with ``then="raise"``) the agent asked for more outputs
            than the script has.
    """
    steps: dict[object, int] = {}

    def replay(input: object, tools: object, tool_choice: object, config: object) -> ModelOutput:
        sample = transcript()  # one per sample; the key keeps it alive, so no id is reused
        step = steps.get(sample, 0)
        steps[sample] = step + 1
        if step >= len(outputs) and then == "raise":
            raise ValueError(f"the script has only {len(outputs)} outputs")
        return outputs[min(step, len(outputs) - 1)].model_copy(deep=True)

    return get_model(MODEL, custom_outputs=replay)
