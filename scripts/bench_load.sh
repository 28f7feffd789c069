#!/usr/bin/env bash
# One typed sentence, on an idle machine and under load (issue 25): the median of the sentences'
# own `seconds` (attnlab-cli translate --beam 5 --batch-size 1 --attention), test_2016_flickr lines
# 11-22, with two thread policies side by side in one run:
#   policy  — the default: waiting threads sleep (OMP_WAIT_POLICY=passive, which attnlab-cli's and the
#             app's launcher sets since issue 53; given here as well) and the threads of the thread
#             policy (attnlab/device.h; one for the bundled model's sentence);
#   unpacked — the default policy with at::linear instead of weights packed once (--no-packed-weights);
#   spin x2 — the old behaviour: OMP_WAIT_POLICY=active, ATTNLAB_THREADS=2 (both cores, spinning), at::linear.
# "Under load" = two busy shell loops started and stopped by this script (one per core).
#   scripts/bench_load.sh DATA_DIR [MODEL]      # DATA_DIR holds test_2016_flickr.de.gz
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/bench_load.sh DATA_DIR [MODEL]}
model=${2:-multi30k-de-en}
cli=build/bin/attnlab-cli
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
src=$(echo "$model" | grep -q en-de && echo en || echo de)
zcat "$data/test_2016_flickr.$src.gz" | sed -n 11,22p >"$work/sentences.txt"

median() {  # the median of the per-sentence seconds in an attention JSON, in ms
  python3 -c "
import json, statistics, sys
s = [x['seconds'] for x in json.load(open(sys.argv[1]))['sentences']]
print('%.0f' % (1000 * statistics.median(s)))" "$1"
}

run() {  # policy name -> median ms
  case $1 in
    policy) env -u ATTNLAB_THREADS OMP_WAIT_POLICY=passive "$cli" translate --model "$model" --beam 5 --batch-size 1 \
              --attention "$work/a.json" <"$work/sentences.txt" >/dev/null ;;
    unpacked) env -u ATTNLAB_THREADS OMP_WAIT_POLICY=passive "$cli" translate --model "$model" --beam 5 --batch-size 1 \
                --no-packed-weights --attention "$work/a.json" <"$work/sentences.txt" >/dev/null ;;
    spin2) OMP_WAIT_POLICY=active ATTNLAB_THREADS=2 "$cli" translate --model "$model" --beam 5 --batch-size 1 \
             --no-packed-weights --attention "$work/a.json" <"$work/sentences.txt" >/dev/null ;;
  esac
  median "$work/a.json"
}

busy_start() { for _ in 1 2; do (while :; do :; done) & done; }
busy_stop() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; }

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| policy | idle (ms) | two busy loops (ms) | loaded / idle |\n| --- | ---: | ---: | ---: |\n'
for p in policy unpacked spin2; do
  run "$p" >/dev/null  # warm the page cache
  idle=$(run "$p")
  busy_start
  sleep 1
  loaded=$(run "$p")
  busy_stop
  case $p in
    policy) name="default (packed weights, passive, 1 thread)" ;;
    unpacked) name="at::linear (--no-packed-weights), passive, 1 thread" ;;
    spin2) name="before issue 25: at::linear, spinning, 2 threads" ;;
  esac
  printf '| %s | %s | %s | %.1f× |\n' "$name" "$idle" "$loaded" "$(echo "$loaded / $idle" | bc -l)"
done
