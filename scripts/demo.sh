#!/usr/bin/env bash
# The main job on the embedded default: score the naive start kernel of the CPU target
# against torch's SDPA on the dev suite and print the table. No GPU, Docker or API key.
# Extra arguments go to the harness (e.g. --suite full --json out.json).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" ""  # no extras: the harness only
cd "$ROOT"
echo "Scoring kernels/cpu_attention/start.cpp, the naive starting kernel, against torch's SDPA." >&2
echo "Expect: every scenario correct, and SDPA about 10-30x faster (a speedup of ~0.03-0.1x)." >&2
exec "$PY" -m evals.harness score --target cpu_attention \
  --kernel kernels/cpu_attention/start.cpp "$@"
