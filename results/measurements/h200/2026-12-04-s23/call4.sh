#!/usr/bin/env bash
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$ROOT
w=/tmp/c4; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
git rev-parse HEAD > $w/rev.txt; git status --short > $w/status.txt
timeout -s INT 380 python3 -m pytest -m gpu tests/gpu -n 8 -p no:cacheprovider -rfE --durations=12 \
  -k "late_side_stream or honest_kernels_pass_every_check or side_stream or per_thread_stream or self_check_fa3 or background_thread or deferred" \
  2>&1 | tee $w/gputests-trace.log | tail -25
tar czf $OUT/c4.tgz -C /tmp c4
