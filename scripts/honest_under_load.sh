#!/usr/bin/env bash
# The honest-under-load proof (issue 25): `score --suite dev` of every honest CPU kernel listed
# in tests/data/cpu_attention/honest.txt, one after another, with HOGS (default 2) CPU hogs
# running beside them the whole time. Writes OUTDIR/summary.txt (exit status, wall seconds,
# load before and after each) and each kernel's log and verdict JSON.
# Usage (from the repository root): bash scripts/honest_under_load.sh OUTDIR [HOGS]
set -uo pipefail
OUT="${1:?usage: bash scripts/honest_under_load.sh OUTDIR [HOGS]}"
HOGS="${2:-2}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/_venv.sh ""  # no extras: the harness only
set +e  # each kernel's exit status is recorded, not fatal
mkdir -p "$OUT"
pids=()
for _ in $(seq "$HOGS"); do python3 -c 'while True: pass' & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "$(git rev-parse --short HEAD): $HOGS hogs beside each run" | tee "$OUT/summary.txt"
status=0
while read -r k; do
  [[ -z "$k" || "$k" == \#* ]] && continue
  name="$(basename "$k" .cpp)"
  before="$(uptime)" start=$(date +%s)
  "$PY" -m evals.harness score --target cpu_attention --kernel "$k" --suite dev \
    --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  rc=$?
  [[ $rc -ne 0 ]] && status=1
  echo "$name rc=$rc wall=$(( $(date +%s) - start ))s | before: ${before##*load} | after: $(uptime | sed 's/.*load//')" \
    | tee -a "$OUT/summary.txt"
done < tests/data/cpu_attention/honest.txt
exit "$status"
