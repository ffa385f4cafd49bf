#!/usr/bin/env bash
# The honest-under-load proof (issue 25): `score` on the dev suite of the start kernel and every
# honest CPU kernel of the corpora, with two CPU hogs running beside them the whole time.
# Usage (from the repository root): bash results/measurements/cpu/2026-12-02-load/run.sh OUTDIR
set -uo pipefail
OUT="${1:?give an output directory}"
mkdir -p "$OUT"
KERNELS=(kernels/cpu_attention/start.cpp tests/data/cpu_attention/fast.cpp
  tests/data/cpu_attention/honest_persistent.cpp tests/data/cpu_attention/honest_unusual.cpp
  tests/data/cpu_attention/honest_autotune.cpp tests/cheats/cpu_attention/honest_split_kv.cpp)
python3 -c 'while True: pass' & HOG1=$!
python3 -c 'while True: pass' & HOG2=$!
trap 'kill "$HOG1" "$HOG2" 2>/dev/null' EXIT
echo "hogs: $HOG1 $HOG2" | tee "$OUT/summary.txt"
for k in "${KERNELS[@]}"; do
  name="$(basename "$k" .cpp)"
  before="$(uptime)"
  start=$(date +%s)
  .venv/bin/python -m evals.harness score --target cpu_attention --kernel "$k" --suite dev \
    --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall=$(( $(date +%s) - start ))s | before: $before | after: $(uptime)" \
    | tee -a "$OUT/summary.txt"
done
