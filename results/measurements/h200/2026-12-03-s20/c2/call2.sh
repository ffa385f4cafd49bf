#!/usr/bin/env bash
# session 20: checks under the shared lock: self-check before/after on one machine, a score,
# two self-checks started together
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD
export PYTHONUNBUFFERED=1
w=/tmp/c2; mkdir -p $w
pack() { tar czf $OUT/c2.tgz -C /tmp c2; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
if [ ! -f /tmp/.compiled ]; then python3 -m compileall -q -j 16 "$(python3 -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1; touch /tmp/.compiled; fi
python3 -m compileall -q -j 16 /tmp/site $ROOT/evals $ROOT/.scratch/s20/old/evals >/dev/null 2>&1
new() { tag=$1; shift; PYTHONPATH=/tmp/site:$ROOT python3 -m evals.harness "$@" --target fa3_hopper --json $w/$tag.json > $w/$tag.log 2> $w/$tag.err; echo "== $tag rc=$? $(date +%T)"; }
old() { tag=$1; shift; (cd $ROOT/.scratch/s20/old && PYTHONPATH=/tmp/site:$ROOT/.scratch/s20/old python3 -m evals.harness "$@" --target fa3_hopper --json $w/$tag.json > $w/$tag.log 2> $w/$tag.err); echo "== $tag rc=$? $(date +%T)"; }
SC="bench --candidate-upstream fa3 --suite dev"
ST="score --kernel $ROOT/kernels/fa3_hopper/start.cu --suite dev"
new sc-new-first $SC
old sc-old $SC
new sc-new $SC
new pair-a $SC & new pair-b $SC & wait
new start-new $ST
python3 .scratch/s20/summ2.py $w/*.json | tee $w/summary.txt
cp $w/summary.txt $OUT/; pack
TEST_LIMIT=170 bash scripts/device_call.sh h1 gputests-head1 2>&1 | tail -4
cp /tmp/h1/gputests-head1.log $w/ 2>/dev/null; pack
TEST_LIMIT=140 bash scripts/device_call.sh h2 gputests-head2 2>&1 | tail -4
cp /tmp/h2/gputests-head2.log $w/ 2>/dev/null; pack
rm -f $OUT/h1.tgz $OUT/h2.tgz
echo "== done $(date +%T)"
