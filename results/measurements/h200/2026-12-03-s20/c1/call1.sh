#!/usr/bin/env bash
# session 20: where the parent's time goes in a dev self-check; GPU tests at 1027885
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
w=$OUT/c1; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $w/gpu.csv
python3 -m compileall -q -j 16 /tmp/site >/dev/null 2>&1
SC="bench --candidate-upstream fa3 --suite dev --target fa3_hopper"
python3 -m evals.harness $SC --json $w/sc-warm.json > $w/sc-warm.log 2>&1; echo "== sc-warm rc=$? $(date +%T)"
timeout 200 python3 .scratch/s20/parts.py dev > $w/parts.txt 2>&1; echo "== parts rc=$? $(date +%T)"; tail -1 $w/parts.txt
python3 -m cProfile -o $w/sc.prof -m evals.harness $SC --json $w/sc-prof.json > $w/sc-prof.log 2>&1; echo "== sc-prof rc=$? $(date +%T)"
python3 - $w <<'PY' > $w/prof.txt 2>&1
import pstats, sys
p = pstats.Stats(sys.argv[1] + "/sc.prof"); p.sort_stats("cumulative").print_stats(90); p.sort_stats("tottime").print_stats(45)
PY
python3 .scratch/s20/summ.py $w/sc-*.json | tee $w/summary.txt
TEST_LIMIT=280 bash scripts/device_call.sh h1 gputests-head1 2>&1 | tail -6
TEST_LIMIT=280 bash scripts/device_call.sh h2 gputests-head2 2>&1 | tail -6
cp /tmp/h1/gputests-head1.log /tmp/h2/gputests-head2.log $w/ 2>/dev/null
rm -f $OUT/h1.tgz $OUT/h2.tgz
echo "== done $(date +%T)"
