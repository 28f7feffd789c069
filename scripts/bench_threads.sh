#!/usr/bin/env bash
# Threads by measured work (issue 53): what the thread policy (attnlab/device.h, core/src/util/device.cpp)
# comes from, and what it gives, side by side in one run, in ms a sentence (the median over ROUNDS runs).
# Part 2's single sentences are timed as issue 25's bench_load.sh does: `attnlab-cli translate --beam 5
# --batch-size 1 --attention FILE`, the median of the sentences' own `seconds` (decoding and maps; no start
# or load). Part 1 and the batch of 32 are timed without maps (a batch's maps cost more than its decoding):
# the process less an empty run of the same options right after it (start and load), over the input's lines.
#  0. The start of `attnlab-cli --help` (median of 7, alternating): the launcher (app/launcher: sets
#     OMP_WAIT_POLICY=passive, then runs attnlab-cli.real in its place) against attnlab-cli.real alone
#     (the CLI before issue 53, which did not re-run itself) and against the real program run twice (what
#     re-running itself, as the app did, costs).
#  1. The table: --threads 1 against --threads 2 on an idle machine, float32 and int8, for steps of
#     growing work: the bundled model (resources/models/multi30k-de-en) at batches of 1, 4 and 32, and
#     OPUS-MT base shape (scripts/marian_reference.py make, as scripts/bench_batches.sh: 6 + 6 layers,
#     d_model 512, FFN 2048, the OPUS directory's ~55k vocabulary, random weights, outputs capped at the
#     source length) at 1, 4 and 32; with each step's multiply-adds (rows = batch x beam 5).
#  2. One sentence (batch 1) on both models and a batch of 32 on the OPUS-base shape, float32, for
#     --threads 1, 2 and the default, idle and beside two busy processes (`while :; do :; done` x2,
#     started and stopped here), the idle and busy runs interleaved.
#   scripts/bench_threads.sh OPUS_DIR MULTI30K_DIR
#     OPUS_DIR      a real OPUS-MT directory (its tokenizer files, e.g. ../shared/data/opus-mt-en-mg)
#     MULTI30K_DIR  holds test_2016_flickr.{de,en}.gz
#   Environment: BIN=build/bin, ROUNDS=2, PARTS="0 1 2", PY=/usr/bin/python3, WORK (kept when set),
#     IDLE_WAIT=30: each idle run waits up to this many seconds for a second with the cores >= 90 % idle
# The machine is shared: the load average is printed before each part. No timing is asserted anywhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
opus=${1:?usage: scripts/bench_threads.sh OPUS_DIR MULTI30K_DIR}
multi30k=${2:?usage: scripts/bench_threads.sh OPUS_DIR MULTI30K_DIR}
BIN=${BIN:-$root/build/bin}
ROUNDS=${ROUNDS:-2}
PARTS=${PARTS:-"0 1 2"}
PY=${PY:-/usr/bin/python3}
cli="$BIN/attnlab-cli"
work=${WORK:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'busy_stop; rm -rf "$work"' EXIT
else
  trap 'busy_stop' EXIT
fi
mkdir -p "$work"
busy=()
busy_start() { for _ in 1 2; do (while :; do :; done) & busy+=($!); done; sleep 1; }
busy_stop() { [ ${#busy[@]} -eq 0 ] || { kill "${busy[@]}" 2>/dev/null || true; wait "${busy[@]}" 2>/dev/null || true; busy=(); }; }

bundled=multi30k-de-en
opus_model="$work/opus-base"
[ -f "$opus_model/model.safetensors" ] || "$PY" "$root/scripts/marian_reference.py" make --from "$opus" \
  --out "$opus_model" --d-model 512 --encoder-layers 6 --decoder-layers 6 --heads 8 --ffn 2048 \
  --format safetensors --seed 3 --eos-bias 8 --max-length 512 --tied-once >/dev/null
zcat "$multi30k/test_2016_flickr.de.gz" | sed -n 1,32p >"$work/de32"
zcat "$multi30k/test_2016_flickr.en.gz" | sed -n 1,32p >"$work/en32"
sed -n 11,22p "$work/de32" >"$work/de12"
sed -n 11,22p "$work/en32" >"$work/en12"

# one run: MODEL INPUT BATCH THREADS TYPE [--attention] -> ms a sentence: with --attention the median of the
# sentences' own seconds; without, the process less an empty run (start and load) right after it, over the
# input's lines (the maps of a batch cost more than its decoding, so batches are timed without them)
translate() {
  local cap=()
  [ "$1" = "$bundled" ] || cap=(--max-len-ratio 1 --max-len-offset 0)  # random weights never end a sentence
  "$cli" translate -m "$1" --device cpu --compute-type "$5" --beam 5 --batch-size "$3" --threads "$4" "${cap[@]}" \
    "${@:6}" <"$2" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
}
run() {
  if [ "${6:-}" = --attention ]; then
    translate "$@" "$work/a.json"
    "$PY" -c "
import json, statistics, sys
print('%.1f' % (1000 * statistics.median(x['seconds'] for x in json.load(open(sys.argv[1]))['sentences'])))" "$work/a.json"
    return
  fi
  local s m e
  s=$(date +%s%N)
  translate "$@"
  m=$(date +%s%N)
  translate "$1" /dev/null "$3" "$4" "$5"
  e=$(date +%s%N)
  echo "$s $m $e $(wc -l <"$2")" | awk '{printf "%.1f", ((($2 - $1) - ($3 - $2)) / 1e6) / $4}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.1f", NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# the multiply-adds of one step per row (attnlab::stepMultiplyAdds), from a package's or a MarianMT config.json
per_row() {
  "$PY" - "$1" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
d = c["d_model"]
if "decoder_layers" in c:  # MarianMT (Hugging Face)
    layers, inner, vocab, qk = c["decoder_layers"], c["decoder_ffn_dim"], c["vocab_size"], d
else:  # an AttnLab package
    layers = c["n_dec_layers"] or c["n_layers"]
    inner, vocab, qk = c["d_dec_inner"] or c["d_inner"], c["n_trg_vocab"], c["n_head"] * c["d_k"]
print(layers * (6 * d * qk + 2 * d * inner) + d * vocab)  # self q, k, v, out; cross q, out; FFN
EOF
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
# ROUNDS rounds of two runs: MODE (idle | busy) THREADS_A THREADS_B MODEL INPUT BATCH TYPE [--attention]. The
# first run is idle with THREADS_A, the second idle (MODE idle) or beside two busy processes (MODE busy) with
# THREADS_B; their medians in $first and $second.
pairs() {
  local mode=$1 ta=$2 tb=$3 one=() two=()
  shift 3
  for _ in $(seq "$ROUNDS"); do
    wait_idle
    one+=("$(run "$1" "$2" "$3" "$ta" "${@:4}")")
    if [ "$mode" = busy ]; then busy_start; else wait_idle; fi
    two+=("$(run "$1" "$2" "$3" "$tb" "${@:4}")")
    [ "$mode" = idle ] || busy_stop
  done
  first=$(median "${one[@]}") second=$(median "${two[@]}")
}
# Waits (up to IDLE_WAIT=30 s) for a second in which the cores were at least 90 % idle (/proc/stat), so that
# "idle" rows are run between the other work of a shared machine; counts the waits that ran out.
not_idle=0
wait_idle() {
  local end=$((SECONDS + ${IDLE_WAIT:-30})) a b
  while [ $SECONDS -lt $end ]; do
    a=$(awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat)
    [ "$(echo "$a $b" | awk '{print (($3 - $1) >= 0.9 * ($4 - $2))}')" = 1 ] && return 0
  done
  not_idle=$((not_idle + 1))
}
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); rounds: $ROUNDS"

if [[ " $PARTS " == *" 0 "* ]]; then
  echo
  echo "Part 0 (load average before: $(load)): the start of attnlab-cli --help, ms (median of 7)"
  wall() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
  twice() { "$@" && "$@"; }
  alone=() launched=() rerun=()
  for _ in 1 2 3 4 5 6 7; do
    alone+=("$(wall "$cli.real" --help)")
    launched+=("$(wall "$cli" --help)")
    rerun+=("$(wall twice "$cli.real" --help)")
  done
  printf '| attnlab-cli.real alone (before) | launcher + attnlab-cli.real (now) | attnlab-cli.real twice (a re-run) |\n| ---: | ---: | ---: |\n'
  printf '| %s | %s | %s |\n' "$(median "${alone[@]}")" "$(median "${launched[@]}")" "$(median "${rerun[@]}")"
fi

if [[ " $PARTS " == *" 1 "* ]]; then
  echo
  echo "Part 1, idle (load average before: $(load)): ms a sentence, --threads 1 against 2"
  printf '| model | batch | multiply-adds a step | compute type | 1 thread | 2 threads | 2 / 1 |\n'
  printf '| --- | ---: | ---: | --- | ---: | ---: | ---: |\n'
  bundled_row=$(per_row "$root/resources/models/$bundled/config.json")
  opus_row=$(per_row "$opus_model/config.json")
  for spec in "$bundled $work/de32 $bundled_row" "$opus_model $work/en12 $opus_row" \
    "$opus_model $work/en32 $opus_row"; do
    read -r m input row <<<"$spec"
    batches="1 4 32"
    [ "$m" = "$bundled" ] || { [ "$input" = "$work/en12" ] && batches="1 4" || batches=32; }
    for b in $batches; do
      for t in float32 int8; do
        pairs idle 1 2 "$m" "$input" "$b" "$t"
        printf '| %s | %s | %.0f M | %s | %s | %s | %.2f |\n' "$([ "$m" = "$bundled" ] && echo bundled || echo OPUS-base)" \
          "$b" "$(echo "$row * $b * 5 / 1000000" | bc -l)" "$t" "$first" "$second" "$(echo "$second / $first" | bc -l)"
      done
    done
  done
fi

if [[ " $PARTS " == *" 2 "* ]]; then
  echo
  echo "Part 2, float32 (load average before: $(load)): ms a sentence, idle and beside two busy processes"
  printf '| model | batch | threads | idle | two busy processes | busy / idle |\n| --- | ---: | --- | ---: | ---: | ---: |\n'
  for spec in "$bundled $work/de12 1" "$opus_model $work/en12 1" "$opus_model $work/en32 32"; do
    read -r m input b <<<"$spec"
    maps=--attention
    [ "$b" = 1 ] || maps=
    for th in 1 2 0; do
      pairs busy "$th" "$th" "$m" "$input" "$b" float32 $maps
      printf '| %s | %s | %s | %s | %s | %.1f× |\n' "$([ "$m" = "$bundled" ] && echo bundled || echo OPUS-base)" "$b" \
        "$([ "$th" = 0 ] && echo default || echo "$th")" "$first" "$second" "$(echo "$second / $first" | bc -l)"
    done
  done
  echo "load average after: $(load)"
fi
echo "idle runs started without a 90 %-idle second before them (IDLE_WAIT ran out): $not_idle"
