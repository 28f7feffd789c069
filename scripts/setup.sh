#!/usr/bin/env bash
# Installs the Debian 12 packages AttnLab needs (only those missing), then configures and builds
# it into build/ (Release, Ninja). Idempotent: a second run only rebuilds what changed.
#   scripts/setup.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build --parallel "$(nproc)"
