#!/usr/bin/env bash
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$ROOT
w=/tmp/c2; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
python3 -m compileall -q -j 16 $ROOT/evals >/dev/null 2>&1
git rev-parse HEAD > $w/rev.txt
s=$(date +%s.%N)
python3 -m evals.harness score --kernel $ROOT/kernels/fa3_hopper/start.cu --suite dev --target fa3_hopper --json $w/start-dev.json > $w/start-dev.log 2> $w/start-dev.err; echo "== score rc=$? wall $(echo "$(date +%s.%N) - $s" | bc)"
tail -4 $w/start-dev.log
python3 .scratch/s23/buildprof.py $w/bp 2>&1 | tee $w/buildprof.log | cut -c1-400
rm -f $w/bp/*.o $w/bp/pp.i
tar czf $OUT/c2.tgz -C /tmp c2
