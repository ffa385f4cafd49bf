#!/usr/bin/env bash
# The test command: ruff (lint and format), mypy on evals/, then pytest (no GPU, Docker,
# network or API key; opt-in markers: gpu, docker, slow). Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" dev
cd "$ROOT"
echo "== ruff" >&2
"$PY" -m ruff check evals tasks tests benchmarks scripts
"$PY" -m ruff format --check evals tasks benchmarks scripts
echo "== mypy" >&2
"$PY" -m mypy
echo "== pytest" >&2
exec "$PY" -m pytest --durations=25 "$@"
