#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs every test under CTest. This is what CI runs.
#   scripts/test.sh [ctest options, e.g. -L core]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 900 "$@"
