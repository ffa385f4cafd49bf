"""Where start.cu's build time goes on this machine: the harness build, then nvcc --time."""
import subprocess, sys, tempfile, time, csv
from pathlib import Path
from evals.harness.targets import get_target
from evals.harness.build import build
from evals.harness.compile_command import read_compile_command

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
target = get_target("fa3_hopper")
cache = Path(tempfile.mkdtemp())
t = time.monotonic(); r = build(target, Path("kernels/fa3_hopper/start.cu"), cache_dir=cache)
print(f"harness build {time.monotonic()-t:.1f} s ok={r.failure is None} seconds={r.seconds:.1f}")
bdir = next(cache.glob("*/build"))
cmd = read_compile_command(bdir)
print("flags:", " ".join(cmd.flags)[:3000]); print("post:", " ".join(cmd.post_flags))
src = cmd.source
for label, extra in [("full", []), ("host-only", ["--cuda-host-only"]), ("device-only", ["--cuda-device-only"])]:
    tf = out / f"time-{label}.csv"
    argv = cmd.compile_argv(src, out / f"o-{label}.o") + ["--time", str(tf)]
    t = time.monotonic(); p = subprocess.run(argv, capture_output=True, text=True, cwd=bdir)
    print(f"{label}: {time.monotonic()-t:.1f} s rc={p.returncode} {p.stderr[-300:]}")
    if tf.is_file(): print(tf.read_text())
# preprocess only
t = time.monotonic(); p = subprocess.run([cmd.compiler, *cmd.flags, "-E", str(src), "-o", str(out/"pp.i"), *cmd.post_flags], capture_output=True, text=True, cwd=bdir)
print(f"preprocess: {time.monotonic()-t:.1f} s rc={p.returncode}; lines {sum(1 for _ in open(out/'pp.i'))}")
t = time.monotonic(); p = subprocess.run(["ninja", "-C", str(bdir), "-t", "commands"], capture_output=True, text=True)
print(p.stdout[-1500:])
