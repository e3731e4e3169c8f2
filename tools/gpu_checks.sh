#!/bin/bash
# A session's device checks, each within run's 600 s limit. `checks` (the default): compute-sanitizer's
# synccheck and racecheck over the hand-written role and asynchronous wgmma tests, the GPU suite,
# TileLang's FlashMLA asynchronous against in order, and TileLang's warpgroup examples (~8 min).
# `bench`: issue 9's gemm record (~5 min; the acceptance card is an H200). Logs under $OUT (or
# /tmp/gpu_checks). From the checkout root, after `bash tools/device_setup.sh` here:
#
#     run(command="bash .gpu/install.sh && bash tools/gpu_checks.sh", carry=[".gpu"])
#     run(command="bash .gpu/install.sh && bash tools/gpu_checks.sh bench", carry=[".gpu"])
cd "$(dirname "$0")/.." || exit 1
OUT="${OUT:-/tmp/gpu_checks}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
git log --oneline -1 2>/dev/null | tee -a "$OUT/gpu.txt"
S="compute-sanitizer --report-api-errors no --print-limit 6"
ROLES="tests/frontend/test_thread_roles.py tests/frontend/test_computing_roles.py tests/frontend/test_async_wgmma.py"

if [ "${1:-checks}" = bench ]; then
  t0=$(date +%s)
  BENCH_ROUNDS=5 BENCH_GEMM_TILES=128x256x64x4x256,128x128x64x4x128 BENCH_GEMM_SCHEDULES=persistent,pingpong \
    timeout 540 python bench/bench_gemm.py > "$OUT/bench_gemm.log" 2>&1
  echo "bench rc=$? $(( $(date +%s) - t0 )) s"
  tail -30 "$OUT/bench_gemm.log"
  exit 0
fi
for tool in synccheck racecheck; do
  # shellcheck disable=SC2086
  timeout 60 $S --tool $tool python -m pytest -q -p no:cacheprovider -m gpu $ROLES > "$OUT/roles_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'passed|failed|SUMMARY' "$OUT/roles_$tool.log" | tr '\n' ' ')"
  grep -m3 -A3 "Barrier error\|Race reported\|hazard" "$OUT/roles_$tool.log"
done
t0=$(date +%s)
timeout 100 python -m pytest -q -p no:cacheprovider -m gpu -n 8 tests > "$OUT/gpu_suite.log" 2>&1
echo "gpu suite rc=$? $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/gpu_suite.log")"
grep FAILED "$OUT/gpu_suite.log" | head
timeout 90 python tools/flashmla_once.py --examples .gpu/tilelang-examples > "$OUT/flashmla.log" 2>&1
echo "flashmla rc=$?"
tail -6 "$OUT/flashmla.log"
timeout 120 python tools/run_tilelang_examples.py --examples .gpu/tilelang-examples --jobs 4 --timeout 100 \
  warp_specialize deepseek_mla deepseek_v32 > "$OUT/tl_examples.log" 2>&1
echo "tilelang examples rc=$?"
tail -6 "$OUT/tl_examples.log"
