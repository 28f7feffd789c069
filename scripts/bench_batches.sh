#!/usr/bin/env bash
# Batches and threads (issue 43): AttnLab in float32 and int8 against the eager PyTorch peer of
# transformers' generate() (../shared/tools/hf_generate_peer.py), side by side in one run, and the
# thread policy: every batch size on the default (--threads 0) against --threads 1 and --threads 2.
#   scripts/bench_batches.sh OPUS_DIR MULTI30K_DIR [PEER]
#     OPUS_DIR      a real OPUS-MT directory (its tokenizer files, e.g. ../shared/data/opus-mt-en-mg)
#     MULTI30K_DIR  holds test_2016_flickr.en.gz
#     PEER          hf_generate_peer.py (default: ../shared/tools/hf_generate_peer.py)
#   Environment: N=128 (sentences), BATCHES="1 8 32", TYPES="float32 int8", BIN=build/bin, WORK (kept when set)
# The model: scripts/marian_reference.py make, OPUS-MT base shapes (6+6 layers, d_model 512, 8 heads,
# FFN 2048, the directory's vocabulary, random weights, the tied embedding stored once), so both sides
# read the same files. Random weights never end a sentence: outputs are capped at the source length
# (--max-len-ratio 1 --max-len-offset 0 here, --max-len-ratio 1.0 --max-len-offset 0 for the peer), beam 4.
# Times are decoding only: the peer's own (load excluded), AttnLab's the whole process less an empty run of
# the same compute type (start and load only). No timing is asserted anywhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
opus=${1:?usage: scripts/bench_batches.sh OPUS_DIR MULTI30K_DIR [PEER]}
multi30k=${2:?usage: scripts/bench_batches.sh OPUS_DIR MULTI30K_DIR [PEER]}
peer=${3:-$root/../shared/tools/hf_generate_peer.py}
BIN=${BIN:-$root/build/bin}
N=${N:-128}
BATCHES=${BATCHES:-"1 8 32"}
TYPES=${TYPES:-"float32 int8"}
PY=${PY:-/usr/bin/python3}
work=${WORK:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cli="$BIN/attnlab-cli"
m="$work/opus-base"
[ -f "$m/model.safetensors" ] || "$PY" "$root/scripts/marian_reference.py" make --from "$opus" --out "$m" \
  --d-model 512 --encoder-layers 6 --decoder-layers 6 --heads 8 --ffn 2048 --format safetensors --seed 3 \
  --eos-bias 8 --max-length 512 --tied-once >/dev/null
zcat "$multi30k/test_2016_flickr.en.gz" | sed -n "1,${N}p" >"$work/src.en"  # sed reads it all: no SIGPIPE under pipefail
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg); $N sentences, beam 4"

seconds() { # the wall time of a command, in seconds
  local start
  start=$(date +%s.%N)
  "$@"
  echo "$(date +%s.%N) - $start" | bc -l
}
attnlab() { # TYPE BATCH THREADS
  "$cli" translate -m "$m" --device cpu --compute-type "$1" --beam 4 --max-len-ratio 1 --max-len-offset 0 \
    --batch-size "$2" --threads "$3" <"$work/src.en" >"$work/out.$1.$2.$3" 2>/dev/null
}
load_only() { "$cli" translate -m "$m" --device cpu --compute-type "$1" </dev/null >/dev/null 2>&1; }

printf '\n| side | compute type | batch | threads | seconds (decoding) |\n| --- | --- | ---: | ---: | ---: |\n'
for b in $BATCHES; do
  for th in 1 2; do
    s=$(OMP_NUM_THREADS=$th "$PY" "$peer" "$m" --beam 4 --batch "$b" --threads "$th" --max-len-ratio 1.0 \
      --max-len-offset 0 <"$work/src.en" 2>&1 >/dev/null | sed -n 's/^seconds \([0-9.]*\).*/\1/p')
    printf '| eager peer (PyTorch) | float32 | %s | %s | %.1f |\n' "$b" "$th" "$s"
  done
  for t in $TYPES; do
    l=$(seconds load_only "$t")
    for th in 0 1 2; do
      s=$(seconds attnlab "$t" "$b" "$th")
      printf '| AttnLab | %s | %s | %s | %.1f |\n' "$t" "$b" "$([ "$th" = 0 ] && echo default || echo "$th")" \
        "$(echo "$s - $l" | bc -l)"
    done
  done
done
