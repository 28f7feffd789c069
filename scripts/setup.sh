#!/usr/bin/env bash
# Installs the Debian 12 packages AttnLab needs (only those missing), then configures and builds
# it into build/ (Release, Ninja). Idempotent: a second run only rebuilds what changed. With CI=true
# (as CI runs it) the project's warnings are errors.
#   scripts/setup.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh

# CI (CI=true) builds with the project's warnings as errors, and attnlab_core's LibTorch units 8 at a time
# (ATTNLAB_UNITY_BUILD, core/CMakeLists.txt: a fresh build's CPU); elsewhere warnings stay warnings and each
# unit compiles alone (an edit recompiles one unit).
werror=OFF
unity=OFF
[ "${CI:-}" = true ] && werror=ON && unity=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_WERROR="$werror" -DATTNLAB_UNITY_BUILD="$unity" "$@"
cmake --build build --parallel "$(nproc)"
