"""Whether a person can attach to this eval over ACP: the one use of a private Inspect API.

Inspect (0.3.285) offers no public way to ask whether the eval runs with ``--acp-server``; its
own routing of ``request_input`` asks ``inspect_ai.agent._acp.server`` (see
:data:`PRIVATE_QUERY`). This module is the only place that touches it:
``tests/test_acp_query.py`` fails, naming the installed Inspect version, when Inspect moves or
changes it, and at run time the human arm records the same message and goes on without a
person instead of asking one who cannot be reached.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from importlib.metadata import version

__all__ = ["PRIVATE_QUERY", "InspectApiChanged", "acp_server_running", "private_query"]

PRIVATE_QUERY = ("inspect_ai.agent._acp.server", "acp_server_accepting_clients")
"""Module and function of Inspect's private query: True while an ACP server takes clients."""


class InspectApiChanged(RuntimeError):
    """Inspect no longer has the private query this module relies on (one-line message)."""


def private_query() -> Callable[[], object]:
    """Inspect's private query, checked to be a function of no arguments.

    Raises:
        InspectApiChanged: It moved or changed; the message names the Inspect version.
    """
    module_name, name = PRIVATE_QUERY
    try:
        query = getattr(importlib.import_module(module_name), name)
        inspect.signature(query).bind()
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        raise InspectApiChanged(
            f"inspect_ai {version('inspect_ai')} has no {module_name}.{name}() "
            f"({type(exc).__name__}: {exc}); evals/bench/questioning/acp.py needs a new way "
            "to tell whether the eval runs with --acp-server"
        ) from None
    return query  # type: ignore[no-any-return]


def acp_server_running() -> bool:
    """Whether this eval accepts ACP clients (``--acp-server``).

    Raises:
        InspectApiChanged: Inspect's private query moved or changed.
    """
    return bool(private_query()())
