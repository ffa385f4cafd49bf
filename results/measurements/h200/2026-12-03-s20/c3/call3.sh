#!/usr/bin/env bash
# session 20: start.cu's dev score at 1d6eb1a (the candidate's worker started afresh between the holds)
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$ROOT
w=/tmp/c3; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
python3 -m compileall -q -j 16 "$(python3 -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')" /tmp/site $ROOT/evals >/dev/null 2>&1
python3 -m evals.harness score --kernel $ROOT/kernels/fa3_hopper/start.cu --suite dev --target fa3_hopper --json $w/start-fresh.json > $w/start-fresh.log 2> $w/start-fresh.err; echo "== rc=$? $(date +%T)"
tail -4 $w/start-fresh.log
python3 .scratch/s20/summ2.py $w/*.json | tee $w/summary.txt
tar czf $OUT/c3.tgz -C /tmp c3
