#!/bin/bash
# A/B: CPU dev score of start.cpp, old (before issue 23) vs new, interleaved
PY=${PY:-.venv/bin/python}
for i in 1 2; do
  for side in old new; do
    dir=/work/main; [ $side = old ] && dir=/tmp/old23
    cd $dir
    s=$(date +%s.%N)
    $PY -m evals.harness score --target cpu_attention --kernel kernels/cpu_attention/start.cpp --suite dev --json /tmp/ab_${side}_$i.json > /tmp/ab_${side}_$i.log 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "$side $i rc=$rc wall=$(echo "$e - $s" | bc)"
  done
done
