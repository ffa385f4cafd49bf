"""One budget for every arm: the agent's messages, tokens and evaluations are counted in the
agent's loop; questions and the questioner's tokens are counted apart; the score records both."""

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, kernel_task
from evals.bench.arms import kernelseek_bank
from tests.helpers import CPU_KERNELS, ROOT

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa",
             sandbox="local")


def _tool(tool, **args):
    out = ModelOutput.for_tool_call(model="mockllm/model", tool_name=tool, tool_arguments=args)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


@pytest.mark.long  # a whole agent run with questions: 40 s beside load
def test_questions_do_not_consume_the_agents_budget_and_evaluations_are_capped(tmp_path):
    outputs = [_tool("bash", command=f"cp {CPU_KERNELS / 'wrong.cpp'} kernel.cpp"),
               _tool("check"), _tool("check"), _tool("submit"), _tool("submit")]
    settings = TaskSettings(**SMOKE, message_limit=8, evaluations=1)
    task = kernel_task(settings, version=1, root=ROOT, solver=kernelseek_bank())
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    sample = log.samples[0]
    tools = [m.text for m in sample.messages if m.role == "tool"]
    assert "evaluation budget spent (1 of 1)" in tools[2]
    questions = [m for m in sample.messages if m.role == "user" and m.metadata
                 and m.metadata.get("kernelseek", {}).get("trigger")]
    assert questions  # the failed submission raised a decision point
    budget = sample.scores["kernel_speedup"].metadata["budget"]
    assert budget["limits"] == {"agent_tokens": None, "agent_messages": 8,
                                "working_time_s": None, "evaluations": 1}
    spent = budget["spent"]
    # 4 turns of 2 messages, then the verification report: the loop stopped on its budget
    # without the 5th output, whatever the questions added
    assert spent["agent_messages"] == 9 and spent["evaluations"] == 1
    assert spent["working_time_s"] > 0
    assert spent["agent_tokens"] == 4 * 15
    assert spent["questions"] == len(questions) and spent["questioner_tokens"] == 0
    agent_messages = [m for m in sample.messages[1:] if m not in questions]
    assert len(agent_messages) == 9
