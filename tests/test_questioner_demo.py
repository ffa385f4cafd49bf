"""The human questioner offline: every decision point and its form, readable evidence, and no
question lost at the end of a run."""

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION
from acp.connection import Connection
from acp.router import MessageRouter, Route
from inspect_ai import eval as inspect_eval

from evals.bench import TaskSettings, kernel_task
from evals.bench.arms import kernelseek_bank
from evals.bench.questioning.decisions import DecisionPoint, failed_claim
from evals.bench.questioning.human import prompt_for
from evals.questioner_demo import LIMIT_CLAIM, SLOW, WRONG, run, script, variant
from evals.replay import replay_model, text, tool_call, write_file
from tests.helpers import ROOT, START_CPU

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa",
             sandbox="local")
REPORT = """check cpu_attention suite=smoke kernel=kernel.cpp seed=1
scenario  ok  max_err
a         NO  5.0e-01
columns:
  ok       yes if the scenario passed every check
summary: 0 of 5 correct, so the kernel does not pass
  5 scenarios (a, b, c, d, ... 1 more): [inaccurate] max abs error 0.5 exceeds tolerance 0.01"""
TIMEOUT_S = 120.0
NOTIFICATIONS = ("session/update", "inspect/event", "inspect/turn_state", "inspect/session_ended")


def _events(sample, key):
    return [e.data[key] for e in sample.events
            if e.event == "info" and isinstance(e.data, dict) and key in e.data]


def test_a_failed_claims_form_shows_why_as_lines_of_text():
    prompt = prompt_for(failed_claim("x" * 900 + "\n" + REPORT), {"best_speedup": 1.5})
    assert "{" not in prompt and "\\n" not in prompt  # no dict, no escaped newlines
    assert "    summary: 0 of 5 correct, so the kernel does not pass" in prompt.splitlines()
    assert any(ln.endswith("exceeds tolerance 0.01") for ln in prompt.splitlines())
    assert "x" * 20 not in prompt and "columns:" not in prompt  # the failures, not the table
    gain = prompt_for(DecisionPoint("suspicious_gain", {"previous_best": 1.0, "geomean": 4.0,
                                                        "harness_flags": []}), {})
    assert "  previous best: 1.000" in gain.splitlines() and "{" not in gain


def test_a_question_on_the_agents_last_idle_reply_reaches_the_agent(tmp_path):
    # before: the loop ended on the idle limit right after asking, the question unread
    task = kernel_task(TaskSettings(**SMOKE), version=1, root=ROOT,
                       solver=kernelseek_bank(max_idle_turns=1))
    model = replay_model([text(LIMIT_CLAIM), text("I will time each part.")])
    [log] = inspect_eval(task, model=model, score=False, log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    [sample] = log.samples
    [question] = _events(sample, "question")
    calls = [e for e in sample.events if e.event == "model"]
    assert len(calls) == 2 and question["text"] in [m.text for m in calls[-1].input]


def test_a_last_failed_claim_ends_the_run_and_says_why_no_question_came(tmp_path):
    task = kernel_task(TaskSettings(**SMOKE), version=1, root=ROOT,
                       solver=kernelseek_bank(attempts=1))
    wrong = variant(START_CPU.read_text(), WRONG)
    model = replay_model([write_file(wrong, "kernel.cpp"), tool_call("submit")])
    [log] = inspect_eval(task, model=model, score=False, log_dir=str(tmp_path), display="none")
    assert log.status == "success"
    [sample] = log.samples
    assert _events(sample, "decision_point_skipped") == ["failed_claim"]
    assert "the run ends" in _events(sample, "why")[0]
    assert not _events(sample, "question")


def test_the_demo_script_meets_the_decision_points_in_order():
    start = START_CPU.read_text()
    steps = script("kernel.cpp", start)
    calls = [s.message.tool_calls[0].function if s.message.tool_calls else "text" for s in steps]
    assert calls == ["bash", "bench", "text", "bash", "bench", "bash", "bench", "bash", "submit",
                     "bash", "submit"]
    assert steps[2].message.text == LIMIT_CLAIM
    assert "demo_forward" in variant(start, SLOW) and "attention_forward(" in variant(start, SLOW)
    with pytest.raises(ValueError, match="no longer registers"):
        variant("int main() {}", SLOW)


async def _answer_every_form(socket_path, seen):
    """Attach as ``inspect acp`` does and answer each form with a question naming its trigger."""
    while not socket_path.exists():
        await asyncio.sleep(0.05)
    reader, writer = await asyncio.open_unix_connection(str(socket_path))

    async def on_form(params):
        seen.setdefault("forms", []).append(params["message"])
        trigger = params["message"].split("decision point: ", 1)[1].split(".", 1)[0]
        return {"action": "accept", "content": {"question": f"What measured the {trigger}?"}}

    async def ignore(params):
        return None

    router = MessageRouter()
    router.add_route(Route(method="elicitation/create", func=on_form, kind="request"))
    for method in NOTIFICATIONS:
        router.add_route(Route(method=method, func=ignore, kind="notification"))
    conn = Connection(handler=router, writer=writer, reader=reader, listening=False)
    receiving = asyncio.create_task(conn.main_loop())
    try:
        await conn.send_request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "clientInfo": {"name": "kernelseek-demo-person", "version": "1"},
            "clientCapabilities": {"elicitation": {"form": {}}},
        })
        while True:
            listing = await conn.send_request("inspect/list_samples", {})
            ids = [s["sessionId"] for s in listing.get("samples", []) if s.get("sessionId")]
            if ids:
                break
            await asyncio.sleep(0.05)
        await conn.send_request("session/load", {"sessionId": ids[0], "cwd": ".",
                                                 "mcpServers": []})
        await receiving  # the server closes the connection when the eval ends
    finally:
        receiving.cancel()
        await conn.close()
        writer.close()


@pytest.mark.slow
def test_the_offline_demo_shows_a_person_every_decision_point(tmp_path):
    sockets = Path(tempfile.mkdtemp(prefix="ks-demo-"))
    socket_path = sockets / "acp.sock"
    seen = {}

    def person():
        try:
            asyncio.run(asyncio.wait_for(_answer_every_form(socket_path, seen), 15 * TIMEOUT_S))
        except BaseException as exc:  # reported by the test, never left in the thread
            seen["error"] = repr(exc)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    try:
        ok = run(wait_s=TIMEOUT_S, acp_server=str(socket_path), log_dir=str(tmp_path),
                 display="none")
    finally:
        thread.join(TIMEOUT_S)
        shutil.rmtree(sockets, ignore_errors=True)
    assert ok and "error" not in seen, seen.get("error")
    triggers = [f.split("decision point: ", 1)[1].split(".", 1)[0] for f in seen["forms"]]
    assert triggers == ["limit_claim", "suspicious_gain", "stall", "failed_claim"]
    failed = seen["forms"][-1]
    assert "    summary: " in failed and "[inaccurate]" in failed and "{" not in failed
