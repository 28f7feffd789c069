#!/usr/bin/env bash
# What align costs beside the translation of the same sentences (issue 54): the 50 hand-aligned Multi30k validation
# pairs (resources/alignment-gold/), the bundled de-en model, one thread, side by side in one run:
#   translate             the 50 sources translated (beam search, no maps)
#   align --method L      links of one attention method, no gold: teacher-forced maps only (no contribution method)
#   align --method alti+  links of ALTI+, no gold: the maps and ALTI+ (value zeroing not computed)
#   align --gold          every method scored: the maps, ALTI+ and value zeroing of every pair
# each --no-reverse (one model; the default symmetrises with the other direction's model: twice the work) and, for
# the last, also with the reverse model. CPU seconds (user + system) of each command, the median of RUNS, and their
# ratio to the translation's.
#   scripts/bench_align.sh [WORK]      Environment: RUNS=3, BIN=build/bin, DATA=/work/shared/data/multi30k
# Prints the load before and after: the ratios are what to read on a shared machine, not the seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/build/bin}
RUNS=${RUNS:-3}
DATA=${DATA:-/work/shared/data/multi30k}
work=${1:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
zcat "$DATA/val.de.gz" | sed -n 11,60p >"$work/dev.de"
zcat "$DATA/val.en.gz" | sed -n 11,60p >"$work/dev.en"
gold=$root/resources/alignment-gold/multi30k-val-11-60.de-en.txt
cli="$BIN/attnlab-cli"
pairs="-m de-en --src $work/dev.de --tgt $work/dev.en --threads 1"

# CPU seconds (user + system, the launcher's child included) of a command line: the median of RUNS runs.
seconds() {
  local all=()
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%U %S' -o "$work/time" bash -c "$1 >/dev/null 2>&1" || { echo "failed: $1" >&2; exit 1; }
    all+=("$(awk '{print $1 + $2}' "$work/time")")
  done
  printf '%s\n' "${all[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

base=$(seconds "$cli translate -m de-en --threads 1 <$work/dev.de")
printf '%-56s %7s s  x%.2f\n' "translate (50 sources)" "$base" 1
row() {
  local s
  s=$(seconds "$cli align $pairs $2")
  printf '%-56s %7s s  x%.2f\n' "$1" "$s" "$(awk -v a="$s" -v b="$base" 'BEGIN {print a / b}')"
}
row "align --method layer:2 --no-reverse (no gold)" "--method layer:2 --no-reverse --output $work/l.txt"
row "align --method alti+ --no-reverse (no gold)" "--method alti+ --no-reverse --output $work/l.txt"
row "align --gold --no-reverse (every method)" "--gold $gold --no-reverse --json $work/g.json"
row "align --gold (every method, symmetrised with en-de)" "--gold $gold --json $work/g.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
