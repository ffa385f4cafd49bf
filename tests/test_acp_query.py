"""The kernelseek arm's one private Inspect API (whether --acp-server is on), checked loudly.

If Inspect moves or changes ``inspect_ai.agent._acp.server.acp_server_accepting_clients``, the
first test fails with a message naming the installed Inspect version (the arm itself would go
on without a person, recording the same message).
"""

from importlib.metadata import version

import pytest

from evals.bench.questioning import acp
from evals.bench.questioning.acp import InspectApiChanged, acp_server_running, private_query


def test_inspect_still_has_the_private_acp_query():
    try:
        query = private_query()
    except InspectApiChanged as exc:
        pytest.fail(f"Inspect changed the private API the kernelseek arm uses: {exc}")
    assert query() is False  # no ACP server outside an eval run with --acp-server
    assert acp_server_running() is False


@pytest.mark.parametrize("query", [
    ("inspect_ai.agent._acp.no_such_module", "acp_server_accepting_clients"),
    ("inspect_ai.agent._acp.server", "no_such_function"),
    ("inspect_ai.agent._acp.server", "acp_server"),  # exists, but takes arguments
])
def test_a_moved_query_fails_loudly_naming_the_inspect_version(monkeypatch, query):
    monkeypatch.setattr(acp, "PRIVATE_QUERY", query)
    with pytest.raises(InspectApiChanged) as info:
        acp_server_running()
    message = str(info.value)
    assert f"inspect_ai {version('inspect_ai')}" in message and query[1] in message
    assert "\n" not in message
