#!/usr/bin/env bash
# The test command: ruff (lint and format), mypy on evals/, then pytest (no GPU, Docker,
# network or API key; opt-in markers: gpu, docker, slow, long). Extra arguments go to pytest.
# `--long` first runs the second tier instead: the end-to-end tests marked `long` (whole
# evals, arms and scores; CI runs it after the default tier), without ruff and mypy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" dev
cd "$ROOT"
if [ "${1:-}" = "--long" ]; then
  shift
  echo "== pytest (the long tier)" >&2
  exec "$PY" -m pytest -m long --durations=25 "$@"
fi
echo "== ruff" >&2
"$PY" -m ruff check evals tasks tests benchmarks scripts
"$PY" -m ruff format --check evals tasks benchmarks scripts
echo "== mypy" >&2
"$PY" -m mypy
echo "== pytest" >&2
exec "$PY" -m pytest --durations=25 "$@"
