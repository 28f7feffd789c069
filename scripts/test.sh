#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs every test under CTest. This is what CI runs.
#   scripts/test.sh [ctest options, e.g. -L core]
# The tests run side by side, one per core (ATTNLAB_TEST_JOBS=N for another count; `-j1` after it for one
# at a time): those that share Qt's test-mode folders take turns (RESOURCE_LOCK), every test's OpenMP
# threads sleep while they wait (OMP_WAIT_POLICY=passive) and the slowest start first (COST), all set in
# tests/CMakeLists.txt. Each test's time-out is sized for a busy machine (its sizing comment there).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 900 --parallel "${ATTNLAB_TEST_JOBS:-$(nproc)}" "$@"
