"""The pre-score cleanup stops the agent's processes and never the sandbox's own.

A container with ``init: true`` runs tini as PID 1 and the keep-alive (``tail -f /dev/null``)
as its child, as the agent's user in the workspace; the agent's orphans are adopted by PID 1
too. A PID namespace (``unshare --pid --fork --mount-proc``, root only) reproduces that here: a
shell as PID 1, its first child the keep-alive, then orphans in and outside the workspace.
"""

import os
import shutil
import subprocess

import pytest

from evals.bench.scoring.processes import STOP

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare for a PID namespace",
)

# PID 1 of the namespace: start the keep-alive first, then the agent's leftovers (orphaned by
# subshells that exit, so PID 1 adopts them), run the cleanup, and report who survived.
CONTAINER = r"""
cd "$WS"
tail -f /dev/null & keep=$!
sleep 1
(sleep 600 &)
(cd / && setsid sleep 601 &)
sleep 0.3
sh -c "$STOP" stop "$MODE" > "$OUT"  # no pipe: its other end would be one more process
sleep 0.3
echo "keep=$keep killed=$(cat "$OUT" | tr '\n' ' ')"
echo "alive=$(for p in /proc/[0-9]*; do cat "$p/comm" 2>/dev/null; done | tr '\n' ' ')"
kill -KILL $keep 2>/dev/null; kill -KILL -1 2>/dev/null; true
"""


def _run(tmp_path, mode):
    ws = tmp_path / "workspace"
    ws.mkdir()
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", CONTAINER],
        env={**os.environ, "WS": str(ws), "STOP": STOP, "MODE": mode,
             "OUT": str(tmp_path / "killed")},
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    keep, killed = first.split(" killed=")
    return keep.removeprefix("keep="), killed.split(), second.removeprefix("alive=").split()


def test_a_containers_cleanup_kills_the_agents_processes_and_spares_the_keep_alive(tmp_path):
    keep, killed, alive = _run(tmp_path, "all")
    assert keep not in killed and "1" not in killed
    assert "tail" in alive and "sleep" not in alive  # both orphans gone, the container lives
    assert len(killed) == 2


def test_a_local_cleanup_kills_only_what_works_in_the_workspace(tmp_path):
    keep, killed, alive = _run(tmp_path, "workspace")
    assert keep not in killed and len(killed) == 1  # the orphan in the workspace
    assert "tail" in alive and alive.count("sleep") == 1  # the one in / is not the agent's
