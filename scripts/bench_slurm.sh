#!/usr/bin/env bash
# The cost of splitting a corpus run over Slurm (issue 55, item 3), side by side in one run on this machine:
#  1. one process: `attnlab-cli eval` of SENTENCES lines of test_2016_flickr with the bundled multi30k-de-en
#     (beam 5, the thread policy's threads: one for this model), before and after the array (the machine's
#     drift in between shows), and of SMALL lines (the start and the model's load): wall seconds and CPU
#     seconds (user + system);
#  2. the same as a 2-task array and its merge on a local single-node cluster of 2 CPUs (scripts/local_slurm.sh):
#     `eval --slurm 2 --submit --slurm-option cpus-per-task=1`, from the submission to the merged file, and each
#     job's run time as Slurm recorded it (StartTime..EndTime, whole seconds); then on SMALL lines: the fixed cost
#     of a job (scheduling, each task's start and load, the merge);
#  3. the projection for 100,000 sentences on N nodes of 2 tasks like this one: the fixed cost plus 100,000 x a
#     sentence's CPU seconds (1's first run less its SMALL run, per line: steadier than the wall on a shared
#     machine, and a one-thread task's wall on an idle node) / (2 N).
# Every figure is printed with the load average: the machine is shared, absolute times are noise. No timing is
# asserted anywhere.
#   scripts/bench_slurm.sh DATA_DIR [WORK]   # DATA_DIR holds test_2016_flickr.{de,en}.gz (../shared/data/multi30k)
#   Environment: SENTENCES=1000, SMALL=4, BIN=build/bin. Runs as root (the local cluster's daemons).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:?usage: scripts/bench_slurm.sh DATA_DIR [WORK]}
BIN=${BIN:-$root/build/bin}
SENTENCES=${SENTENCES:-1000}
SMALL=${SMALL:-4}
cli="$BIN/attnlab-cli"
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap '"$root/scripts/local_slurm.sh" stop "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
else
  mkdir -p "$work"
  trap '"$root/scripts/local_slurm.sh" stop "$work/cluster" >/dev/null 2>&1 || true' EXIT
fi
work=$(cd "$work" && pwd)
load() { cut -d' ' -f1-3 /proc/loadavg; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
for lang in de en; do
  zcat "$data/test_2016_flickr.$lang.gz" | sed -n "1,${SENTENCES}p" >"$work/test.$lang"
  sed -n "1,${SMALL}p" "$work/test.$lang" >"$work/small.$lang"
done
eval_args() { echo eval --model multi30k-de-en --beam 5 --src "$work/$1.de" --ref "$work/$1.en"; }
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $SENTENCES sentences"
printf '\n| run | wall s | CPU s | load before |\n| --- | ---: | ---: | --- |\n'

# One process on CORPUS (test | small), its result in one-NAME.json; sets `took` and `cpu`; prints the row.
one_run() {
  local corpus=$1 name=$2 before start
  before=$(load)
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  /usr/bin/time -o "$work/cpu" -f '%U %S' "$cli" $(eval_args "$corpus") --json "$work/one-$name.json" >/dev/null
  took=$(calc "$(date +%s.%N) - $start")
  cpu=$(awk '{print $1 + $2}' "$work/cpu")
  printf '| one process, %s lines (%s) | %.1f | %.1f | %s |\n' "$(wc -l <"$work/$corpus.de")" "$name" "$took" "$cpu" \
    "$before"
}

# Submits `eval --slurm 2` of CORPUS and waits for the merged file; sets `took` (wall, s); prints the row with each
# job's run time as Slurm recorded it.
array_run() {
  local corpus=$1 before start out ids times
  before=$(load)
  rm -f "$work/array-$corpus.json"
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  out=$("$cli" $(eval_args "$corpus") --json "$work/array-$corpus.json" --slurm 2 --submit \
    --slurm-option cpus-per-task=1)
  ids=$(echo "$out" | sed -n 's/^\(array\|merge\) job \([0-9]*\):.*/\2/p' | tr '\n' ' ')
  until [ -s "$work/array-$corpus.json" ]; do
    squeue -h -o %A | grep -q . || [ -s "$work/array-$corpus.json" ] || {
      echo "the jobs ended without a merged result:" >&2
      cat "$work/array-$corpus.slurm/logs/"* >&2
      exit 1
    }
    sleep 0.2
  done
  took=$(calc "$(date +%s.%N) - $start")
  while squeue -h -o %A | grep -q .; do sleep 0.2; done # the merge job's end recorded
  # shellcheck disable=SC2086
  times=$(for id in $ids; do scontrol -o show job "$id"; done |
    sed -n 's/.*StartTime=\([^ ]*\) EndTime=\([^ ]*\) .*/\1 \2/p' |
    while read -r s e; do echo $(($(date -d "$e" +%s) - $(date -d "$s" +%s))); done | tr '\n' '+' | sed 's/+$//')
  printf '| 2-task array + merge, %s lines (jobs %s) | %.1f | tasks, merge: %s s | %s |\n' \
    "$(wc -l <"$work/$corpus.de")" "${ids% }" "$took" "$times" "$before"
}

one_run small small
small_cpu=$cpu
one_run test before
one_before=$took one_cpu=$cpu
WAIT=180 "$root/scripts/local_slurm.sh" start "$work/cluster" 2 >/dev/null
export SLURM_CONF="$work/cluster/slurm.conf"
array_run test
big=$took
one_run test after
one_after=$took
array_run small
fixed=$took
same=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])))' \
  "$work/one-before.json" "$work/array-test.json")
echo "(the merged JSON equals the one process's: $same)"

per=$(calc "($one_cpu - $small_cpu) / ($SENTENCES - $SMALL)")
printf '\nper sentence: %.4f CPU s (one process, start and load taken off); the 2-task array took %.2fx / %.2fx the one process before / after it; fixed cost of a job (an array of %s lines and its merge): %.1f s\n' \
  "$per" "$(calc "$big / $one_before")" "$(calc "$big / $one_after")" "$SMALL" "$fixed"
printf '\n| nodes (2 tasks each) | 100,000 sentences, projected |\n| ---: | ---: |\n'
for n in 1 4 16 64; do
  s=$(calc "$fixed + 100000 * $per / (2 * $n)")
  printf '| %s | %.0f s (%.2f h) |\n' "$n" "$s" "$(calc "$s / 3600")"
done
echo "load after: $(load)"
