#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs AttnLab's main job: the desktop app on the
# bundled model (resources/models/multi30k-de-en). Where the app was not built (a build with
# -DATTNLAB_BUILD_GUI=OFF) or where there is no display (the app exits 3), translates the example
# sentences with attnlab-cli instead.
#   scripts/run.sh [app or CLI arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -x build/bin/attnlab ]; then
  status=0
  build/bin/attnlab "$@" || status=$?
  # 3: no display here (over SSH, in a container); the app said so. Run what can run: the CLI.
  [ $status -eq 3 ] || exit $status
  echo "run: translating the bundled examples with attnlab-cli instead; for the window, run scripts/run.sh in a desktop session or under xvfb-run" >&2
  set -- # the app's arguments are not the CLI's
fi
if [ $# -eq 0 ] && ! build/bin/attnlab-cli inspect >/dev/null 2>&1; then
  echo "run: the bundled model in resources/models/ is missing or unreadable; pass one: scripts/run.sh --model DIR" >&2
  build/bin/attnlab-cli --help
  exit 1
fi
build/bin/attnlab-cli inspect "$@"
cut -f1 resources/models/multi30k-de-en/examples.tsv | build/bin/attnlab-cli translate --beam 5 "$@"
