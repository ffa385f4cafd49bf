#!/usr/bin/env bash
# session 19: warm start (workers and first calls before the lock): before/after on one machine
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
export PYTHONUNBUFFERED=1
w=$OUT/b; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
python3 -m compileall -q -j 16 /tmp/site >/dev/null 2>&1
new() { tag=$1; shift; PYTHONPATH=/tmp/site:$ROOT python3 -m evals.harness "$@" --target fa3_hopper --json $w/$tag.json > $w/$tag.log 2> $w/$tag.err; echo "== $tag rc=$? $(date +%T)"; }
old() { tag=$1; shift; (cd $ROOT/.scratch/old && PYTHONPATH=/tmp/site:$ROOT/.scratch/old python3 -m evals.harness "$@" --target fa3_hopper --json $w/$tag.json > $w/$tag.log 2> $w/$tag.err); echo "== $tag rc=$? $(date +%T)"; }
SC="bench --candidate-upstream fa3 --suite dev"
ST="score --kernel $ROOT/kernels/fa3_hopper/start.cu --suite dev"
new start-new-cold $ST
old selfcheck-old $SC
new selfcheck-new $SC
old start-old $ST
new start-new $ST
python3 .scratch/summ.py $w/*.json | tee $w/summary.txt
TEST_LIMIT=${TEST_LIMIT:-300} bash scripts/device_call.sh h1 gputests-head1 2>&1 | tail -8
echo "== done $(date +%T)"
