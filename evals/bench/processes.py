"""Stopping the agent's processes before the final score.

An agent may leave processes running (``nohup``, ``setsid``, a background loop) that rewrite the
kernel or interfere with timing while the scorer runs. Before scoring, every process whose
working directory lies in the workspace is killed; in a container sandbox (``docker``, ``k8s``)
every process the sandbox user may signal is killed as well (``kill -KILL -1`` spares PID 1 and
the caller).
"""

from __future__ import annotations

from inspect_ai.util import sandbox

from evals.bench.settings import TaskSettings

# POSIX sh: list /proc once, skip this shell, kill what works in the workspace, print the pids.
STOP_BY_CWD = r"""
self=$$; ws=$(pwd -P)
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = "$self" ] && continue
  c=$(readlink "$p/cwd" 2>/dev/null) || continue
  case "$c" in "$ws"|"$ws"/*) kill -KILL "$pid" 2>/dev/null && echo "$pid";; esac
done
true
"""
STOP_ALL = "kill -KILL -1 2>/dev/null; true"


async def stop_agent_processes(settings: TaskSettings) -> dict[str, object]:
    """Kill the agent's leftover processes; returns what was done, for the score's metadata.

    Returns:
        ``{"killed": [pids], "all_user_processes": bool}``, or ``{"error": reason}``.
    """
    sb = sandbox()
    try:
        result = await sb.exec(["sh", "-c", STOP_BY_CWD], timeout=60)
        killed = [int(p) for p in (result.stdout or "").split() if p.isdigit()]
        container = settings.sandbox != "local"
        if container:
            await sb.exec(["sh", "-c", STOP_ALL], timeout=60)
    except Exception as exc:  # a broken sandbox is reported by the score itself
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"killed": killed, "all_user_processes": container}
