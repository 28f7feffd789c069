#!/usr/bin/env bash
# Runs the CTest suite under every OpenBLAS kernel this machine's Debian OpenBLAS can select and
# with 1 and 2 threads, one line per configuration. The tests must pass on any x86-64 processor:
# CI runs on whichever machine a change comes from (Intel or AMD, any kernel).
#   scripts/portability.sh [ctest options, e.g. -L core]     (builds first when build/ is missing)
# OMP_NUM_THREADS sets both OpenBLAS's and LibTorch's thread count (attnlab::setComputeThreads
# reads it when no explicit count is given).
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/tst_training ] || scripts/setup.sh >/dev/null
export QT_QPA_PLATFORM=offscreen
kernels=(default Haswell SkylakeX Zen Sandybridge Prescott)
status=0
printf '%-12s %-8s %-12s %s\n' kernel threads selected result
for k in "${kernels[@]}"; do
  for t in 1 2; do
    # env's options (-u) come before its assignments
    if [ "$k" = default ]; then env=(-u OPENBLAS_CORETYPE); else env=(OPENBLAS_CORETYPE="$k"); fi
    env+=(OMP_NUM_THREADS="$t")
    selected=$(env "${env[@]}" OPENBLAS_VERBOSE=2 build/bin/tst_positional_encoding 2>&1 | sed -n 's/^Core: //p' | head -1)
    log=$(mktemp)
    start=$(date +%s)
    env "${env[@]}" ctest --test-dir build --timeout 900 "$@" >"$log" 2>&1
    rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
    failed=$(grep -E '^\s+[0-9]+ - ' "$log" | sed 's/^ *[0-9]* - //; s/ (.*//' | tr '\n' ' ')
    printf '%-12s %-8s %-12s %s (%ss)%s\n' "$k" "$t" "${selected:-?}" "$summary" "$(( $(date +%s) - start ))" \
      "${failed:+  failed: $failed}"
    [ $rc -eq 0 ] || status=1
    rm -f "$log"
  done
done
exit $status
