"""The relays the harness runs under: small scripts run with ``python -P -c`` in a sandbox.

:data:`RELAY` runs the harness where the agent works (the local sandbox) and prints the verdict
on the harness's own channel; :data:`SCORER_RELAY` runs it in the container sandboxes'
:data:`SCORER_SERVICE` service, where the agent never runs a command, from the kernel's bytes
alone. :mod:`evals.bench.scoring.harness_exec` starts them, and :mod:`evals.bench.scoring.relay_io`
reads and checks what they print. They use the standard library and the harness only: the
sandbox's image may lack inspect_ai.
"""

from __future__ import annotations

__all__ = ["RELAY", "RELAY_NOTE", "SCORER_RELAY", "SCORER_SERVICE"]

# Runs inside the sandbox (stdlib and the harness only: the image may lack inspect_ai).
RELAY = """
import os, shutil, sys, tempfile
nonce = sys.stdin.readline().strip()
from evals.harness.pipeline.cli import main
d = tempfile.mkdtemp(prefix="kernelseek-verdict-")
try:
    path = os.path.join(d, "verdict.json")
    rc = main(sys.argv[1:] + ["--json", path])
    body = open(path).read() if os.path.isfile(path) else ""
finally:
    shutil.rmtree(d, ignore_errors=True)
sys.stdout.write("\\n" + nonce + "\\n" + body.replace("\\n", " ") + "\\n")
sys.stdout.flush()
sys.exit(rc)
"""

SCORER_SERVICE = "scorer"
"""The container sandboxes' service that runs the harness (``sandboxes/*/compose.yaml``)."""
RELAY_NOTE = ":relay:"
"""After the nonce, at the start of a line of the scorer relay's stdout: its cleanup report."""

# Runs in the scorer container (stdlib and the harness only). stdin: the nonce, then the
# kernel's bytes in base64, one line each. It kills what earlier runs left (`sweep`), before
# `score` empties what the harness user may write, writes the kernel into a folder of its own
# under its original name, runs the harness on it, kills what outlived the run and prints the
# verdict as RELAY does. The verdict is the object the harness's `evaluate` returned, kept in
# this process; the file the harness also writes is only compared with it.
SCORER_RELAY = """
import base64, json, os, shutil, signal, stat, sys, tempfile, time
nonce = sys.stdin.readline().strip()
kernel = base64.b64decode(sys.stdin.readline().strip(), validate=True)
args = sys.argv[1:]
def note(**what):
    sys.stdout.write("\\n" + nonce + ":relay:" + json.dumps(what) + "\\n")
    sys.stdout.flush()
def fields(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()
def command(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return "?"
    return raw.replace(b"\\0", b" ").decode(errors="replace").strip()[:160] or "?"
def pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]
def spared():
    keep, pid = {1}, os.getpid()
    while pid > 1:  # this relay and its callers, up to the docker exec'd one (ppid 0)
        keep.add(pid)
        f = fields(pid)
        pid = int(f[1]) if f else 0
    born = fields(1)
    kids = [(int(f[19]), p) for p in pids() for f in [fields(p)] if f and f[1] == "1"]
    if born and kids:  # the keep-alive: PID 1's oldest child, started with it
        started, pid = min(kids)
        if started - int(born[19]) <= 5 * os.sysconf("SC_CLK_TCK"):
            keep.add(pid)
    return keep
def sweep():
    keep, found = spared(), {}
    for _ in range(500):  # stop every other process until none is new, then kill them all
        new = False
        for pid in pids():
            f = None if pid in keep or pid in found else fields(pid)
            if f is None or f[0] in "ZX":
                continue
            found[pid] = command(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
                new = True
            except OSError:
                pass
        if not new:
            break
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    left = list(found)
    while left and time.monotonic() < deadline:
        left = [p for p in left if (fields(p) or ["X"])[0] not in "ZX"]
        if left:
            time.sleep(0.02)
    return [{"pid": p, "cmd": c} for p, c in sorted(found.items())], left
def wipe():
    removed, kept = [], []
    def unlock(func, path, exc):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            pass
    for root in {tempfile.gettempdir(), os.path.expanduser("~"), "/dev/shm"}:
        try:  # never "/" (a HOME left unset)
            if os.path.realpath(root) == "/" or not os.access(root, os.W_OK):
                continue
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            path = os.path.join(root, name)
            if os.path.ismount(path) or path == os.environ.get("KERNELSEEK_LOCK_DIR"):
                continue  # a folder mounted in to be shared (device locks): not this run's
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    os.chmod(path, 0o700)
                    shutil.rmtree(path, onerror=unlock)
                else:
                    os.unlink(path)
            except OSError:
                pass
            (kept if os.path.lexists(path) else removed).append(path)
    return removed, kept
killed, survived = sweep()
removed, kept = wipe() if args[0] == "score" else ([], [])
note(before={"killed": killed, "survived": survived, "removed": removed[:50],
             "removed_count": len(removed), "not_removed": kept[:50]})
at = args.index("--kernel") + 1
name = args[at]
if os.path.basename(name) != name or name.startswith("."):
    sys.exit("relay: --kernel must be a bare file name, got %r" % name)
import evals.harness.pipeline.cli as cli
held = []
evaluate = getattr(cli, "evaluate", None)
if callable(evaluate):
    def kept_evaluate(*a, **k):
        held.append(evaluate(*a, **k))
        return held[-1]
    cli.evaluate = kept_evaluate
work = tempfile.mkdtemp(prefix="kernelseek-kernel-")
d = tempfile.mkdtemp(prefix="kernelseek-verdict-")
try:
    args[at] = os.path.join(work, name)
    with open(args[at], "wb") as f:
        f.write(kernel)
    path = os.path.join(d, "verdict.json")
    rc = cli.main(args + ["--json", path])
    outlived, _ = sweep()
    text = open(path).read() if os.path.isfile(path) else ""
    body = json.dumps(held[-1].to_json()) if held else text.replace("\\n", " ")
    try:
        changed = bool(held) and json.dumps(json.loads(text), sort_keys=True) != json.dumps(
            json.loads(body), sort_keys=True)
    except ValueError:
        changed = bool(held)
finally:
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
note(after={"outlived": outlived, "verdict_file_changed": changed, "kept_in_memory": bool(held)})
sys.stdout.write("\\n" + nonce + "\\n" + body + "\\n")
sys.stdout.flush()
sys.exit(rc)
"""
