#!/usr/bin/env bash
# FA3's dev self-check (twice) while four score runs of start.cu build beside it
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
ROOT=$PWD; export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$ROOT
w=$OUT/d; mkdir -p $w
for i in 1 2 3 4; do
  python3 -m evals.harness score --kernel kernels/fa3_hopper/start.cu --suite dev --target fa3_hopper --json /tmp/bg$i.json > /tmp/bg$i.log 2>&1 &
done
sleep 2
for n in 1 2; do
  python3 -m evals.harness bench --candidate-upstream fa3 --suite dev --target fa3_hopper --json $w/selfcheck-beside4-$n.json > $w/sc$n.log 2> $w/sc$n.err
  echo "== selfcheck $n rc=$? $(date +%T)"
done
grep -c "building\|built" /tmp/bg1.log; tail -2 /tmp/bg1.log
pkill -f "evals.harness score" ; sleep 1
python3 .scratch/summ.py $w/selfcheck-beside4-*.json
grep -h "host issue\|host_work\|re-judged\|side by side" $w/*.log $w/*.json | head -5
