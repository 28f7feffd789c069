#!/usr/bin/env bash
# Installs the Debian 12 packages AttnLab needs (only those missing), then configures and builds
# it into build/ (Release, Ninja). Idempotent: a second run only rebuilds what changed. With CI=true
# (as CI runs it) the project's warnings are errors.
#   scripts/setup.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh

# CI (CI=true) builds with the project's warnings as errors; elsewhere they stay warnings.
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_WERROR="$werror" "$@"
cmake --build build --parallel "$(nproc)"
