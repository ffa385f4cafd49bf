"""A person joins a ``kernelseek`` run over ACP and asks the agent a question.

The eval runs with Inspect's ACP server (``eval(acp_server=PATH)``, the public form of
``inspect eval --acp-server=PATH``). A test client in a second thread then does what the
``inspect acp`` command does, with the ``acp`` library's client side (``acp.connection.Connection``
and ``acp.router.MessageRouter``) on the same wire methods: ``initialize`` with the
``elicitation.form`` capability, ``inspect/list_samples`` to find the running sample's session,
``session/load`` to attach to it, then it answers the ``elicitation/create`` request that the
human director's ``request_input`` sends at the decision point. The ``kernelseek`` solver is not
an ACP-driven agent loop, so its sample is attached observe-only: it is listed by
``inspect/list_samples`` (what the ``inspect acp`` picker reads), not by ``inspect/list_sessions``.

Offline and without stdin: mockllm outputs carry usage, the scripted agent stops after two
replies without a tool call (no harness run), and scoring is skipped (``score=False``): the
question's delivery is what is under test. Every wait is bounded (the director's ``wait_s``, the
client's timeout, the thread join), so a broken channel fails the test instead of hanging it.
"""

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path

from acp import PROTOCOL_VERSION
from acp.connection import Connection
from acp.router import MessageRouter, Route
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from evals.bench import TaskSettings, kernel_task
from evals.bench.arms import kernelseek
from tests.helpers import ROOT

SMOKE = dict(target="cpu_attention", suite="smoke", score_suite="smoke", upstream="sdpa",
             sandbox="local")
USAGE = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
QUESTION = "Where does the time go outside the kernel?"
CLAIM = "We are near the theoretical peak."
TIMEOUT_S = 60.0
# What the server tells an attached client; this client has nothing to show, so it drops them.
NOTIFICATIONS = ("session/update", "inspect/event", "inspect/turn_state", "inspect/session_ended")


def _text(text):
    out = ModelOutput.from_content(model="mockllm/model", content=text)
    out.usage = USAGE
    return out


async def _ignore(params):
    return None


async def _session_id(conn):
    """The running sample's ACP session, once the eval lists it."""
    while True:
        listing = await conn.send_request("inspect/list_samples", {})
        ids = [s["sessionId"] for s in listing.get("samples", []) if s.get("sessionId")]
        if ids:
            return ids[0]
        await asyncio.sleep(0.05)


async def _attach_and_ask(socket_path, seen):
    """Attach to the sample as ``inspect acp`` does, and answer its one question."""
    while not socket_path.exists():
        await asyncio.sleep(0.05)
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    asked = asyncio.Event()

    async def on_question(params):
        seen["request"] = params
        asked.set()
        return {"action": "accept", "content": {"question": QUESTION}}

    router = MessageRouter()
    router.add_route(Route(method="elicitation/create", func=on_question, kind="request"))
    for method in NOTIFICATIONS:
        router.add_route(Route(method=method, func=_ignore, kind="notification"))
    conn = Connection(handler=router, writer=writer, reader=reader, listening=False)
    receiving = asyncio.create_task(conn.main_loop())
    try:
        await conn.send_request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "clientInfo": {"name": "kernelseek-test-person", "version": "1"},
            "clientCapabilities": {"elicitation": {"form": {}}},
        })
        session = await _session_id(conn)
        await conn.send_request("session/load",
                                {"sessionId": session, "cwd": ".", "mcpServers": []})
        await asked.wait()
        await receiving  # the server closes the connection when the eval ends
        seen["closed_by_server"] = True
    finally:
        receiving.cancel()
        await conn.close()
        writer.close()


def _person(socket_path, seen):
    """A thread running the client, bounded by TIMEOUT_S; errors land in ``seen``."""

    def run():
        try:
            asyncio.run(asyncio.wait_for(_attach_and_ask(socket_path, seen), TIMEOUT_S))
        except BaseException as exc:  # reported by the test, never left in the thread
            seen["error"] = repr(exc)

    return threading.Thread(target=run, name="acp-person", daemon=True)


def test_a_person_attached_over_acp_asks_the_kernelseek_agent_a_question(tmp_path):
    # A short socket path (AF_UNIX paths are limited to about 100 bytes).
    sockets = Path(tempfile.mkdtemp(prefix="ks-acp-"))
    socket_path = sockets / "acp.sock"
    seen = {}
    person = _person(socket_path, seen)
    task = kernel_task(TaskSettings(**SMOKE), version=1, root=ROOT,
                       solver=kernelseek(wait_s=TIMEOUT_S, max_idle_turns=2))
    model = get_model("mockllm/model", custom_outputs=[
        _text(CLAIM), _text("I will time the loads and the exponentials separately.")])
    person.start()
    try:
        [log] = inspect_eval(task, model=model, acp_server=str(socket_path), score=False,
                             log_dir=str(tmp_path), display="none")
    finally:
        person.join(TIMEOUT_S)
        shutil.rmtree(sockets, ignore_errors=True)
    assert not person.is_alive()
    assert "error" not in seen, seen.get("error")
    assert log.status == "success"

    # What the person saw: the trigger, the claim, the schema of the answer.
    request = seen["request"]
    assert "KernelSeek decision point: limit_claim." in request["message"]
    assert CLAIM in request["message"]
    assert request["requestedSchema"]["required"] == ["question"]
    assert seen.get("closed_by_server")

    # What the run recorded: the question as a user message, with its source and trigger.
    [sample] = log.samples
    asked = [m for m in sample.messages
             if m.role == "user" and m.metadata and "kernelseek" in m.metadata]
    assert [m.text for m in asked] == [QUESTION]
    meta = asked[0].metadata["kernelseek"]
    assert meta["source"] == "human" and meta["trigger"] == "limit_claim"
    assert meta["state"]["claim"] == CLAIM
    questions = [e.data["question"] for e in sample.events
                 if e.event == "info" and isinstance(e.data, dict) and "question" in e.data]
    assert [(q["source"], q["trigger"], q["text"]) for q in questions] == [
        ("human", "limit_claim", QUESTION)]
    [answer] = [e for e in sample.events if e.event == "input"]
    assert answer.outcome == "accepted" and answer.content == {"question": QUESTION}
    # The agent's next turn saw the question.
    last_call = [e for e in sample.events if e.event == "model"][-1]
    assert QUESTION in [m.text for m in last_call.input]
