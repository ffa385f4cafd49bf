#!/usr/bin/env bash
# On the H200 (device tool): install the carried wheels, compile bytecode, then run the
# named steps; everything lands in $OUT/<tag>.tgz (one file back). Usage:
#   bash scripts/device_call.sh TAG STEP...   (steps: gputests-time, devtime, start-dev,
#   selfcheck-dev3, start-full, gputests-all, ncu)
set -uo pipefail
tag=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:${PYTHONPATH:-} || exit 1
export PYTHONUNBUFFERED=1
if [ ! -f /tmp/.compiled ]; then
  python3 -m compileall -q -j 16 "$(python3 -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')" /tmp/site >/dev/null 2>&1
  touch /tmp/.compiled
fi
work=/tmp/$tag; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$work/gpu.csv"
for step in "$@"; do
  echo "== $step $(date +%T)"
  case $step in
    gputests-time) python3 -m pytest -m gpu tests/gpu/test_device_time.py -q -p no:cacheprovider -rA 2>&1 | tee "$work/gputests-time.log" | tail -5 ;;
    devtime) python3 benchmarks/device_time.py --out "$work/devtime" > "$work/devtime.log" 2>&1; tail -4 "$work/devtime.log" ;;
    start-dev) python3 benchmarks/fa3_hopper.py --out "$work/runs" start-dev 2>&1 | grep -E "SUMMARY|note|Error" ;;
    selfcheck-dev3) python3 benchmarks/fa3_hopper.py --out "$work/runs" 'selfcheck-dev*3' 2>&1 | grep -E "SUMMARY|Error" ;;
    start-full) python3 benchmarks/fa3_hopper.py --out "$work/runs" start-full 2>&1 | grep -E "SUMMARY|Error" ;;
    gputests-all) python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rA --deselect tests/gpu/test_profile_ncu.py 2>&1 | tee "$work/gputests-all.log" | tail -15 ;;
    ncu) python3 -m pytest -m gpu tests/gpu/test_profile_ncu.py -q -p no:cacheprovider 2>&1 | tee "$work/ncu.log" | tail -3 ;;
    *) echo "unknown step $step" ;;
  esac
  tar czf "$OUT/$tag.tgz" -C /tmp "$tag"
done
echo "== done $(date +%T)"
