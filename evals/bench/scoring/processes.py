"""Stopping the agent's processes before the final score.

An agent may leave processes running (``nohup``, ``setsid``, a background loop) that rewrite the
kernel or interfere with timing while the scorer runs. Before scoring, every process whose
working directory lies in the workspace is killed; in a container sandbox (``docker``, ``k8s``)
every process the sandbox user may signal. The sandbox's own processes are spared (see
:data:`STOP`): killing the keep-alive stopped the container before the score could run.
"""

from __future__ import annotations

from inspect_ai.util import sandbox

STOP = r"""
mode=$1; self=$$; ws=$(pwd -P)
spare=" 1 "; pid=$self
while [ -n "$pid" ] && [ "$pid" -gt 1 ] 2>/dev/null; do  # this shell and its callers
  spare="$spare$pid "
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || break
  set -- ${stat##*) }; pid=$2
done
stat=$(cat /proc/1/stat); set -- ${stat##*) }; born=${20}
hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
oldest=; keep=
for p in /proc/[0-9]*; do  # the sandbox's keep-alive: PID 1's oldest child, started with it
  stat=$(cat "$p/stat" 2>/dev/null) || continue
  set -- ${stat##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$oldest" ] || [ "${20}" -lt "$oldest" ]; then oldest=${20}; keep=${p#/proc/}; fi
done
[ -n "$oldest" ] && [ $((oldest - born)) -le $((5 * hz)) ] && spare="$spare$keep "
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  case "$spare" in *" $pid "*) continue;; esac
  if [ "$mode" != all ]; then
    c=$(readlink "$p/cwd" 2>/dev/null) || continue
    case "$c" in "$ws"|"$ws"/*) ;; *) continue;; esac
  fi
  kill -KILL "$pid" 2>/dev/null && echo "$pid"
done
true
"""
"""POSIX sh, run in the workspace: ``stop workspace`` kills the processes working in it, ``stop
all`` every process this user may signal. Either spares PID 1 (the sandbox's init), its oldest
child (the container's keep-alive command, ``tail -f /dev/null`` under ``init: true``: it runs as
the agent's user in the workspace, and the container stops without it), and this shell with its
callers; it prints the pids it killed. The agent's own orphans are PID 1's children too (init
adopts them), but younger than the keep-alive; a first child started more than 5 s after PID 1
is not a keep-alive (without ``init``, PID 1 is the command itself and adopts the orphans)."""


async def stop_agent_processes(*, container: bool) -> dict[str, object]:
    """Kill the agent's leftover processes; returns what was done, for the score's metadata.

    Args:
        container: The sample's sandbox is a container (the sandbox actually in use, not the
            task's argument: Inspect's ``--sandbox local`` may replace a container, and
            ``stop all`` on the host would kill every process of the user).

    Returns:
        ``{"killed": [pids], "all_user_processes": bool}``, or ``{"error": reason}``.
    """
    try:
        result = await sandbox().exec(
            ["sh", "-c", STOP, "stop", "all" if container else "workspace"], timeout=60
        )
    except Exception as exc:  # a broken sandbox is reported by the score itself
        return {"error": f"{type(exc).__name__}: {exc}"}
    killed = [int(p) for p in (result.stdout or "").split() if p.isdigit()]
    return {"killed": killed, "all_user_processes": container}
