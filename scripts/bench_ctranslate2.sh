#!/usr/bin/env bash
# A CTranslate2 model of OPUS-MT base shape (6+6 layers, d_model 512, 8 heads, feed-forward 2048, a
# shared vocabulary of VOCAB tokens, tied embeddings) in AttnLab (issue 42): load time and peak
# resident memory for each stored dtype against model.bin's size, and one sentence's latency.
#   scripts/bench_ctranslate2.sh [WORK]
#     WORK  where the models go (default: a temporary directory, removed at the end)
#   Environment: VOCAB=32000, DTYPES="float32 float16 int8", RUNS=3 (medians), BIN=build/bin
# The models: scripts/ct2_reference.py make --d-model 512 --layers 6 --heads 8 --ffn 2048
# --vocab-size VOCAB --share-embeddings --tie-projection --dtype D --seed 1 (random weights; whitespace
# tokens). Each is loaded by `attnlab-cli inspect` (its "load time" line) under /usr/bin/time (max RSS),
# and translates one sentence of 12 tokens greedily with every map (`translate --beam 1 --max-len 16
# --attention`). Every dtype is read as float32: the memory is the float32 model's whatever model.bin
# holds (a compute type that keeps int8 weights is issue 43's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/build/bin}
VOCAB=${VOCAB:-32000}
DTYPES=${DTYPES:-"float32 float16 int8"}
RUNS=${RUNS:-3}
PY=${PY:-/usr/bin/python3}
work=${1:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf '%-8s %10s %10s %12s %12s %14s\n' dtype "bin MiB" "load s" "load RSS MiB" "RSS/bin" "sentence s"
for d in $DTYPES; do
  m="$work/opus-base-$d"
  [ -f "$m/model.bin" ] || "$PY" "$root/scripts/ct2_reference.py" make --out "$m" --d-model 512 --layers 6 \
    --heads 8 --ffn 2048 --vocab-size "$VOCAB" --share-embeddings --tie-projection --dtype "$d" --seed 1 >/dev/null
  bin_mib=$(du -m "$m/model.bin" | cut -f1)
  loads=() rss=()
  for _ in $(seq "$RUNS"); do
    out=$( { /usr/bin/time -f 'RSS %M' "$BIN/attnlab-cli" inspect -m "$m" --device cpu; } 2>&1)
    loads+=("$(grep -i 'load time' <<<"$out" | grep -oE '[0-9]+\.[0-9]+' | head -1)")
    rss+=("$(grep '^RSS' <<<"$out" | awk '{print $2 / 1024}')")
  done
  load=$(printf '%s\n' "${loads[@]}" | median)
  peak=$(printf '%s\n' "${rss[@]}" | median)
  words=$("$PY" -c "import json;v=json.load(open('$m/shared_vocabulary.json'));print(' '.join(v[100:112]))")
  secs=()
  for _ in $(seq "$RUNS"); do
    "$BIN/attnlab-cli" translate -m "$m" --device cpu --beam 1 --max-len 16 --max-len-ratio 0 --text "$words" \
      --attention "$work/a.json" >/dev/null
    secs+=("$("$PY" -c "import json;print(json.load(open('$work/a.json'))['sentences'][0]['seconds'])")")
  done
  sentence=$(printf '%s\n' "${secs[@]}" | median)
  printf '%-8s %10s %10.2f %12.0f %12.2f %14.3f\n' "$d" "$bin_mib" "$load" "$peak" \
    "$(awk -v a="$peak" -v b="$bin_mib" 'BEGIN {print a / b}')" "$sentence"
done
