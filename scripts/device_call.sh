#!/usr/bin/env bash
# On the H200 (device tool): install the FA3 wheel if .whl was carried, collect whatever wheel
# packs were carried (.whl-pack/N from scripts/device_wheels.py: FA3, FA4 with its CuTe DSL,
# inspect-ai; /tmp survives between calls while the machine stays warm, and each set is
# installed once all its files have arrived), compile bytecode, then run the named steps;
# everything lands in $OUT/<tag>.tgz (one file back). Usage:
#   bash scripts/device_call.sh TAG STEP...   (steps: gputests-time, devtime, start-dev, start-dev2
#   (twice: the machine's first score, then a warm one),
#   selfcheck-dev, selfcheck-dev2, selfcheck-dev3, start-full, gputests-all, gputests-cheats, gputests-rest,
#   gputests-static, gputests-honest, gputests-integrity, faster-dev, rows, ncu,
#   fa4-support (which dev/full scenarios and draws FA4 runs here: benchmarks/fa4_support.py),
#   fa4-dry (fa4_blackwell's dry run on this Hopper GPU: FA4 self-check and start.cu, dev),
#   fa4-self (the FA4 self-check of fa4-dry alone, $FA4_RUNS times, default 1),
#   fa4-self-cache (fa4-self with FA4's disk cache of compiled kernels on, in /tmp: the first
#   run fills it, later ones load from it; does it cut the repeated compiles, and does FA4's
#   timing or host issue move with it),
#   fa4-full (start.cu on the fa4 full suite, dry run), fa4-gputests (tests/gpu/test_fa4_dry_run.py),
#   fa4-rows (tasks/fa4_blackwell through Inspect, dry run, a scripted agent replaying start.cu);
#   concurrency-124 (benchmarks/concurrency.py on fa3_hopper: 1, 2, then 4 agents; any digits;
#   more arguments in $CONC_ARGS, e.g. "-T suite=smoke -T score_suite=smoke");
#   forge-gain / forge-tol / forge-floor: benchmarks/gpu_forge_gain.py on smoke, seed 11 (padded
#   host issue; the wall-clock tolerance alone; 0.81 of each call, padded, inside the trace
#   check's 1.25x);
#   rows-start / rows-faster: one kernel's fa3_hopper rows (dev, 3 epochs) through Inspect;
#   forge-edge: the padded forge (300 us) reporting each of $FORGE_KEEPS (default "0.92 0.90
#   0.88") of every call, and its twin, on smoke, seed 11 (the gated check's edge: its largest
#   gain);
#   gputests-forge: the timer forges and three honest kernels;
#   gated: the stream gate's GPU tests, then benchmarks/gpu_gated_batch.py on start.cu,
#   faster.cu, a forge reporting 0.8 of each call (padded) and its twin, and FA3, once per
#   variant of arguments in $GATED_VARIANTS (';'-separated, e.g. "--digest --events;--digest
#   --settle-us 20"; or one variant in $GATED_ARGS), each into gated/vN/;
#   gated-l2: benchmarks/gpu_gated_batch.py on start.cu, smoke, with each L2 treatment of a
#   batch (a flush before each call, the check's rotated copies, none): is it the L2 that
#   makes start.cu's decode calls run at 0.63-0.68 of their event-timed median back to back?
#   gputests-gated: the gated wall-clock check's GPU tests, the digests' and the stream gate's (U
#   against the report per scenario printed);
#   gputests-full: every GPU test in one uninterrupted run (8 workers; the device lock
#   serialises the timed parts);
#   gputests-head1/2: the GPU tests of the honest kernels, the timing cheats and the contract
#   cheats, then start.cu's, the hostile-process ones and the upstream outliers;
#   pytest steps stop (printing what failed) at $TEST_LIMIT seconds, default 540)
set -uo pipefail
tag=$1; shift
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
python3 scripts/device_unpack.py || echo "(a wheel set did not install: the steps that need it will fail)"
# /tmp/site and what its .pth files add (the CuTe DSL's packages), then the repository
site_path() { python3 -c "import site, sys; site.addsitedir('/tmp/site'); print(':'.join(p for p in sys.path if p.startswith('/tmp/site')))"; }
export PYTHONPATH=$(site_path):$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
if [ ! -f /tmp/.compiled ]; then
  python3 -m compileall -q -j 16 "$(python3 -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1
  touch /tmp/.compiled
fi
python3 -m compileall -q -j 16 /tmp/site >/dev/null 2>&1
# every GPU test file, the longest-running first (the Nsight Compute profile took 219-279 s of
# s34c's 525 s and s35a's 566 s when it started late): they then overlap the rest
gpu_test_files() {
  local first="tests/gpu/test_profile_ncu.py tests/gpu/test_hostile_process_gpu.py tests/gpu/test_fa3_cheats.py"
  echo $first; ls tests/gpu/test_*.py | grep -vxF -f <(tr ' ' '\n' <<< "$first")
}
# gputests-full less the files named in $GPU_SKIP (space-separated paths)
gpu_test_files_kept() { gpu_test_files | tr ' ' '\n' | grep -vxF -f <(tr ' ' '\n' <<< "${GPU_SKIP:-}" | grep .) ; }
work=/tmp/$tag; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$work/gpu.csv"
for step in "$@"; do
  echo "== $step $(date +%T)"
  case $step in
    gputests-time) python3 -m pytest -m gpu tests/gpu/test_device_time.py -q -p no:cacheprovider -rA 2>&1 | tee "$work/gputests-time.log" | tail -5 ;;
    devtime) python3 benchmarks/device_time.py --out "$work/devtime" > "$work/devtime.log" 2>&1; tail -4 "$work/devtime.log" ;;
    start-dev) python3 benchmarks/gpu_target.py --out "$work/runs" start-dev 2>&1 | grep -E "SUMMARY|note|Error" ;;
    start-dev2) python3 benchmarks/gpu_target.py --out "$work/runs" 'start-dev*2' 2>&1 | grep -E "SUMMARY|note|Error" ;;
    selfcheck-dev) python3 benchmarks/gpu_target.py --out "$work/runs" selfcheck-dev 2>&1 | grep -E "SUMMARY|Error" ;;
    selfcheck-dev3) python3 benchmarks/gpu_target.py --out "$work/runs" 'selfcheck-dev*3' 2>&1 | grep -E "SUMMARY|Error" ;;
    selfcheck-dev2) python3 benchmarks/gpu_target.py --out "$work/runs" 'selfcheck-dev*2' 2>&1 | grep -E "SUMMARY|Error" ;;
    start-full) python3 benchmarks/gpu_target.py --out "$work/runs" start-full 2>&1 | grep -E "SUMMARY|Error" ;;
    gputests-all) python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rA --deselect tests/gpu/test_profile_ncu.py 2>&1 | tee "$work/gputests-all.log" | tail -15 ;;
    gputests-cheats) python3 -m pytest -m gpu tests/gpu/test_fa3_cheats.py -q -p no:cacheprovider -rA \
        --durations=10 2>&1 | tee "$work/gputests-cheats.log" | tail -15 ;;
    gputests-full) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu $(gpu_test_files_kept) -n "${GPU_WORKERS:-8}" \
        -p no:cacheprovider -v -rfEs --durations=30 2>&1 | tee "$work/gputests-full.log" | grep -E "FAILED|ERROR|passed|failed" | tail -40 ;;
    gputests-rest) python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rA --durations=10 \
        --deselect tests/gpu/test_profile_ncu.py --ignore tests/gpu/test_fa3_cheats.py \
        2>&1 | tee "$work/gputests-rest.log" | tail -15 ;;
    gputests-static) python3 -m pytest -m gpu tests/gpu/test_fa3_cheats.py -q -p no:cacheprovider -rA \
        -k "honest or raw_syscall or composite_op or cublas or cudnn or aten_matmul or dlopen" \
        2>&1 | tee "$work/gputests-static.log" | tail -12 ;;
    gputests-honest) python3 -m pytest -m gpu tests/gpu/test_fa3_cheats.py -q -p no:cacheprovider -rA \
        -k "honest or timed_subset or late_side" 2>&1 | tee "$work/gputests-honest.log" | tail -10 ;;
    gputests-integrity) python3 -m pytest -m gpu tests/gpu/test_fa3_cheats.py -q -p no:cacheprovider -rA \
        -k "honest or late_side or side_stream_pooled or per_thread or host_roundtrip or timed_subset or pointer_cache or crash or hang or raw_syscall" \
        2>&1 | tee "$work/gputests-integrity.log" | tail -25 ;;
    faster-dev) python3 -m evals.harness score --target fa3_hopper --suite dev \
        --json "$work/faster-dev.json" --kernel tests/data/fa3_hopper/faster.cu \
        > "$work/faster-dev.log" 2>&1
      grep -E "summary|time:|phases|protect|fail" "$work/faster-dev.log" | head -20 ;;
    rows) python3 benchmarks/inspect_replay.py --task tasks/fa3_hopper -T sandbox=local \
        -T score_suite=dev --kernel kernels/fa3_hopper/start.cu \
        --kernel tests/data/fa3_hopper/faster.cu --epochs 3 --max-samples 2 --out "$work/rows" \
        > "$work/rows.log" 2>&1; echo "rows rc=$?"; tail -15 "$work/rows.log" ;;
    fa4-support) KERNELSEEK_FA4_ARCH=sm_90a timeout -s INT "${TEST_LIMIT:-540}" python3 \
        benchmarks/fa4_support.py --out "$work/fa4-support.json" --suite dev --suite full \
        --draws 6 > "$work/fa4-support.log" 2>&1; grep -vE '"status": "ok"' "$work/fa4-support.log" | tail -25 ;;
    fa4-dry)
      KERNELSEEK_FA4_ARCH=sm_90a python3 benchmarks/gpu_target.py --target fa4_blackwell \
        --out "$work/fa4-dry" selfcheck-dev start-dev 2>&1 | tee "$work/fa4-dry.log" \
        | grep -E "SUMMARY|NOTE|Error|error" ;;
    fa4-self)
      KERNELSEEK_FA4_ARCH=sm_90a python3 benchmarks/gpu_target.py --target fa4_blackwell \
        --out "$work/fa4-dry" "selfcheck-dev*${FA4_RUNS:-1}" 2>&1 | tee "$work/fa4-self.log" \
        | grep -E "SUMMARY|NOTE|rror" ;;
    fa4-self-cache)  # the same with FA4's own disk cache of compiled kernels (off by default)
      FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_DIR=/tmp/fa4-cute-cache \
      KERNELSEEK_FA4_ARCH=sm_90a python3 benchmarks/gpu_target.py --target fa4_blackwell \
        --out "$work/fa4-cache" "selfcheck-dev*${FA4_RUNS:-1}" 2>&1 | tee "$work/fa4-self-cache.log" \
        | grep -E "SUMMARY|NOTE|rror" ;;
    fa4-full)
      KERNELSEEK_FA4_ARCH=sm_90a python3 benchmarks/gpu_target.py --target fa4_blackwell \
        --out "$work/fa4-dry" start-full 2>&1 | tee "$work/fa4-full.log" | grep -E "SUMMARY|NOTE|rror" ;;
    fa4-gputests) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu -n 2 -rfE \
        -p no:cacheprovider tests/gpu/test_fa4_dry_run.py 2>&1 | tee "$work/fa4-gputests.log" | tail -15 ;;
    gputests-forge) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu \
        tests/gpu/test_fa3_cheats.py -n 4 -p no:cacheprovider -rfE --durations=10 -k \
        "timer_forge or honest_kernels and (split_kv or tma or autotune)" 2>&1 | tee "$work/gputests-forge.log" | tail -12 ;;
    gputests-head1) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu tests/gpu -n 5 \
        -p no:cacheprovider -rfE --durations=20 -k "honest_kernels or racy or timer_forge or \
        wall_batch_skip or whole_contract" 2>&1 | tee "$work/gputests-head1.log" | tail -25 ;;
    gputests-head2) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu tests/gpu -n 6 \
        -p no:cacheprovider -rfE --durations=20 -k "start_kernel or provenance or dev_shape or \
        write_escape or build_time_plant or driver_function or bad_kernels or outlier" 2>&1 | tee "$work/gputests-head2.log" | tail -25 ;;
    rows-start|rows-faster) kernel=kernels/fa3_hopper/start.cu  # one kernel's rows, 3 epochs
      [ "$step" = rows-faster ] && kernel=tests/data/fa3_hopper/faster.cu
      timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/inspect_replay.py \
        --task tasks/fa3_hopper -T sandbox=local -T score_suite=dev --kernel "$kernel" \
        --epochs 3 --max-samples 3 --out "$work/$step" > "$work/$step.log" 2>&1
      echo "$step rc=$?"; tail -8 "$work/$step.log" ;;
    fa4-rows) KERNELSEEK_FA4_ARCH=sm_90a python3 benchmarks/inspect_replay.py \
        --task tasks/fa4_blackwell -T sandbox=local -T score_suite=dev \
        --kernel kernels/fa4_blackwell/start.cu --epochs 1 --out "$work/fa4-rows" \
        > "$work/fa4-rows.log" 2>&1; echo "fa4-rows rc=$?"; tail -15 "$work/fa4-rows.log" ;;
    concurrency-*) agents=${step#concurrency-}  # concurrency-12: 1 then 2 agents; -4: 4 agents
      timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/concurrency.py --task tasks/fa3_hopper \
        --kernel kernels/fa3_hopper/start.cu $(echo "$agents" | sed 's/./--agents & /g') \
        ${CONC_ARGS:-} --out "$work/$step" > "$work/$step.log" 2>&1
      echo "$step rc=$?"; tail -12 "$work/$step.log" ;;
    forge-gain|forge-tol|forge-floor) args="--seeds 11 --suite smoke"  # gpu_forge_gain.py
      [ "$step" = forge-tol ] && args="$args --floor 0.8 --hide-us 0 --pad-us 0"
      [ "$step" = forge-floor ] && args="$args --floor 0.81 --keep 0.81 --hide-us 0"
      timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/gpu_forge_gain.py $args \
        --out "$work/$step" > "$work/$step.log" 2>&1; echo "$step rc=$?"; tail -3 "$work/$step.log" ;;
    forge-edge) for keep in ${FORGE_KEEPS:-0.92 0.90 0.88}; do  # the gated bound's edge
        timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/gpu_forge_gain.py --seeds 11 \
          --suite smoke --keep "$keep" --floor "$keep" --hide-us 0 --pad-us 300 \
          --out "$work/forge-edge-$keep" > "$work/forge-edge-$keep.log" 2>&1
        echo "forge-edge keep $keep rc=$?"; tail -1 "$work/forge-edge-$keep.log"; done ;;
    gated) mkdir -p "$work/gated/kernels"  # the gated-batch prototype (issue 40)
      python3 -m pytest -m gpu tests/gpu/test_stream_gate.py -q -p no:cacheprovider -rA 2>&1 | tail -3
      python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; \
import gpu_forge_gain as f; f.variants(Path('$work/gated/kernels'), keep=0.8, hide_us=0, floor=0.8, pad_us=300)"
      IFS=';' read -ra variants <<< "${GATED_VARIANTS:-${GATED_ARGS:-}}"
      [ ${#variants[@]} -eq 0 ] && variants=("")
      for v in "${!variants[@]}"; do
        g="$work/gated/v$((v + 1))"; mkdir -p "$g"; echo "variant v$((v + 1)): ${variants[$v]}" | tee "$g/args.txt"
        for k in kernels/fa3_hopper/start.cu tests/data/fa3_hopper/faster.cu \
            "$work/gated/kernels/forge_padded.cu" "$work/gated/kernels/forge_twin.cu" fa3; do
          name=$(basename "$k" .cu); which=(--kernel "$k"); [ "$k" = fa3 ] && which=(--upstream fa3)
          timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/gpu_gated_batch.py "${which[@]}" \
            --out "$g" ${variants[$v]} > "$g/$name.log" 2>&1; echo "$name rc=$?"; tail -1 "$g/$name.log"
        done
        tar czf "$OUT/$tag.tgz" -C /tmp "$tag"
      done ;;
    gated-l2) mkdir -p "$work/gated-l2"  # start.cu's gated batches with each L2 treatment
      for flush in memset rotate none; do
        timeout -s INT "${TEST_LIMIT:-540}" python3 benchmarks/gpu_gated_batch.py \
          --kernel kernels/fa3_hopper/start.cu --flush "$flush" --digest \
          --out "$work/gated-l2/$flush" > "$work/gated-l2/$flush.log" 2>&1
        echo "gated-l2 $flush rc=$?"; tail -1 "$work/gated-l2/$flush.log"; done ;;
    gputests-gated) timeout -s INT "${TEST_LIMIT:-540}" python3 -m pytest -m gpu \
        tests/gpu/test_gated_wall.py tests/gpu/test_digest_gpu.py tests/gpu/test_stream_gate.py -n 4 -rA -s -p no:cacheprovider \
        2>&1 | tee "$work/gputests-gated.log" | grep -E "passed|failed|FAILED|ERROR|: U " | tail -60 ;;
    ncu) python3 -m pytest -m gpu tests/gpu/test_profile_ncu.py -q -p no:cacheprovider 2>&1 | tee "$work/ncu.log" | tail -3 ;;
    *) echo "unknown step $step" ;;
  esac
  tar czf "$OUT/$tag.tgz" -C /tmp "$tag"
done
echo "== done $(date +%T)"
