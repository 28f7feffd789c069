#!/usr/bin/env bash
# What heads --importance costs as the importance chain (issue 55; docs/scale-out.md "The importance chain"), side
# by side in one run on this machine:
#  1. one process: `attnlab-cli heads --importance` of LINES lines of test_2016_flickr with the bundled
#     multi30k-de-en (--importance-kinds KINDS, --bootstrap 100, --threads 1, --batch-size BATCH: blocks of 8 x BATCH
#     lines), before and after the chain (the machine's drift in between shows): wall and CPU seconds;
#  2. `heads --importance --slurm 2 --submit --slurm-option cpus-per-task=1` on a local single-node cluster of 2 CPUs
#     (scripts/local_slurm.sh): its four jobs (stage 1's array and merge, stage 2's), from the submission to the
#     merged file, and each job's run time as Slurm recorded it (StartTime..EndTime, whole seconds); whether the
#     result equals the one process's (floats within 1e-9 relative, the gradient's seconds aside).
# Every figure is printed with the load average: the machine is shared, absolute times are noise. No timing is
# asserted anywhere.
#   scripts/bench_slurm_chain.sh DATA_DIR [WORK]   # DATA_DIR holds test_2016_flickr.{de,en}.gz
#   Environment: LINES=16, BATCH=1 (16 lines: 2 blocks of 8, a block a task), KINDS=cross, BIN=build/bin.
#   Runs as root (the local cluster's daemons).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:?usage: scripts/bench_slurm_chain.sh DATA_DIR [WORK]}
BIN=${BIN:-$root/build/bin}
LINES=${LINES:-16}
BATCH=${BATCH:-1}
KINDS=${KINDS:-cross}
cli="$BIN/attnlab-cli"
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
trap '"$root/scripts/local_slurm.sh" stop "$work/cluster" >/dev/null 2>&1 || true' EXIT
for lang in de en; do zcat "$data/test_2016_flickr.$lang.gz" | sed -n "1,${LINES}p" >"$work/imp.$lang"; done
args=(heads --model multi30k-de-en --src "$work/imp.de" --ref "$work/imp.en" --importance --importance-kinds "$KINDS"
  --bootstrap 100 --threads 1 --batch-size "$BATCH")
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
seconds_since() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$1"; }

echo "machine: $(nproc) cores; $LINES lines, --importance-kinds $KINDS, --batch-size $BATCH"
printf '\n| run | wall s | CPU s or jobs | load before |\n| --- | ---: | --- | --- |\n'
one_process() { # NAME: one process into one-NAME.json, a row
  local before start
  before=$(loadavg)
  start=$(date +%s.%N)
  /usr/bin/time -o "$work/cpu" -f '%U %S' "$cli" "${args[@]}" --json "$work/one-$1.json" >/dev/null
  printf '| one process (%s) | %s | %s | %s |\n' "$1" "$(seconds_since "$start")" \
    "$(awk '{printf "%.1f", $1 + $2}' "$work/cpu")" "$before"
}

one_process before
WAIT=180 "$root/scripts/local_slurm.sh" start "$work/cluster" 2 >/dev/null
export SLURM_CONF="$work/cluster/slurm.conf"
before=$(loadavg)
start=$(date +%s.%N)
ids=$("$cli" "${args[@]}" --json "$work/chain.json" --slurm 2 --slurm-option cpus-per-task=1 --submit |
  sed -n 's/^\(array\|merge\) job \([0-9]*\):.*/\2/p' | tr '\n' ' ')
last=${ids% }
last=${last##* }
until scontrol -o show job "$last" | grep -q 'JobState=\(COMPLETED\|FAILED\|CANCELLED\)'; do sleep 0.2; done
took=$(seconds_since "$start")
[ -s "$work/chain.json" ] || {
  echo "the chain ended without a merged result:" >&2
  tail -n 5 "$work"/chain.slurm/logs/* >&2
  exit 1
}
# Each job's run time, the longest of an array's tasks: stage 1's array, merge 1, stage 2's array, merge 2.
jobs=$(for id in $ids; do
  scontrol -o show job "$id" | sed -n 's/.*StartTime=\([^ ]*\) EndTime=\([^ ]*\) .*/\1 \2/p' |
    while read -r s e; do echo $(($(date -d "$e" +%s) - $(date -d "$s" +%s))); done | sort -n | tail -n 1
done | tr '\n' '+' | sed 's/+$//')
printf '| the chain, 2 tasks a stage (jobs %s) | %s | jobs %s s | %s |\n' "${ids% }" "$took" "$jobs" "$before"
one_process after
python3 - "$work/one-before.json" "$work/chain.json" <<'EOF'
import json, sys
def flat(j, at, out):
    if isinstance(j, dict) and j:
        for k, v in j.items():
            if k != "seconds": flat(v, at + "." + k, out)
    elif isinstance(j, list) and j:
        for i, v in enumerate(j): flat(v, f"{at}[{i}]", out)
    else: out[at] = j
a, b = {}, {}
flat(json.load(open(sys.argv[1])), "", a)
flat(json.load(open(sys.argv[2])), "", b)
same = a.keys() == b.keys() and all(
    abs(a[k] - b[k]) <= 1e-9 * max(abs(a[k]), abs(b[k])) if isinstance(a[k], float) else a[k] == b[k] for k in a)
print(f"\n(the chain's result equals the one process's within 1e-9: {same})")
EOF
echo "load after: $(loadavg)"
