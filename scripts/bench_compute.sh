#!/usr/bin/env bash
# Compute types (issue 43): float32 (exact) against int8 and bfloat16 (oneDNN), side by side in one run.
#   scripts/bench_compute.sh DATA_DIR [WORK]   # DATA_DIR holds test_2016_flickr.{de,en}.gz
#   Environment: SENTENCES=1000 (test lines), TYPES="float32 int8 bfloat16" (bfloat16 is skipped where the
#   processor lacks its instructions), RUNS=3, BIN=build/bin
# 1. Fidelity: each bundled model translates test_2016_flickr (beam 5, one sentence at a time, as the app
#    translates what is typed) in each compute type: BLEU, chrF, seconds (wall), CPU seconds (user + system:
#    steadier than the wall's on a shared machine, which other processes slow down), and how many
#    translations are identical to float32's. THREADS (default: the CLI's own policy) is passed as --threads.
# 2. Speed at OPUS-MT base shape: a model of 6+6 layers, d_model 512, 8 heads, feed-forward 2048 and
#    54,688 tokens (random weights, scripts/ct2_reference.py make; the output projection is 107 MiB in
#    float32), 12 sentences of 12 tokens one at a time (--batch-size 1: as the app translates what is
#    typed), beam 4, every map (`translate --attention`): the median of the JSON's per-sentence `seconds`
#    over RUNS runs, and the peak resident memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:?usage: scripts/bench_compute.sh DATA_DIR [WORK]}
BIN=${BIN:-$root/build/bin}
TYPES=${TYPES:-"float32 int8 bfloat16"}
SENTENCES=${SENTENCES:-1000}
RUNS=${RUNS:-3}
PY=${PY:-/usr/bin/python3}
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cli="$BIN/attnlab-cli"
grep -q avx512_bf16 /proc/cpuinfo || TYPES=${TYPES/bfloat16/}
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for lang in de en; do zcat "$data/test_2016_flickr.$lang.gz" | head -n "$SENTENCES" >"$work/test.$lang"; done

threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
printf '\n| model | compute type | BLEU | chrF | seconds | CPU seconds | identical to float32 |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n'
for pair in de-en en-de; do
  src=${pair%-*} trg=${pair#*-}
  for t in $TYPES; do
    start=$(date +%s.%N)
    /usr/bin/time -o "$work/cpu" -f '%U %S' "$cli" eval --model "multi30k-$pair" --compute-type "$t" \
      "${threads[@]}" --batch-size 1 --src "$work/test.$src" --ref "$work/test.$trg" --output "$work/$pair.$t.txt" \
      >"$work/$pair.$t.score" 2>/dev/null
    secs=$(echo "$(date +%s.%N) - $start" | bc -l)
    bleu=$(grep -o 'BLEU[ =:]*[0-9.]*' "$work/$pair.$t.score" | head -1 | grep -o '[0-9.]*$')
    chrf=$(sed -n 's/^chrF2* = \([0-9.]*\).*/\1/p' "$work/$pair.$t.score")
    same=$(paste -d '\t' "$work/$pair.float32.txt" "$work/$pair.$t.txt" | awk -F '\t' '$1 == $2 { n++ } END { printf "%d of %d", n, NR }')
    cpu=$(awk '{ print $1 + $2 }' "$work/cpu")
    printf '| %s | %s | %s | %s | %.1f | %.1f | %s |\n' "multi30k-$pair" "$t" "$bleu" "$chrf" "$secs" "$cpu" "$same"
  done
done

m="$work/opus-base"
[ -f "$m/model.bin" ] || "$PY" "$root/scripts/ct2_reference.py" make --out "$m" --d-model 512 --layers 6 --heads 8 \
  --ffn 2048 --vocab-size 54688 --share-embeddings --tie-projection --seed 1 >/dev/null
"$PY" - "$m/shared_vocabulary.json" >"$work/typed.txt" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
for i in range(12):
    print(" ".join(v[100 + 37 * i + 13 * k] for k in range(12)))
EOF
printf '\n| OPUS-MT base shape | compute type | one sentence, every map (median) | peak RSS |\n| --- | --- | ---: | ---: |\n'
for t in $TYPES; do
  secs=()
  for _ in $(seq "$RUNS"); do
    rss=$( { /usr/bin/time -f '%M' "$cli" translate -m "$m" --device cpu --compute-type "$t" --beam 4 --max-len 12 \
      --max-len-ratio 0 --batch-size 1 --attention "$work/a.json" <"$work/typed.txt" >/dev/null; } 2>&1 | tail -1)
    secs+=($("$PY" -c "import json;print(' '.join(str(s['seconds']) for s in json.load(open('$work/a.json'))['sentences']))"))
  done
  med=$(printf '%s\n' "${secs[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '| 6+6 x 512, 54,688 tokens | %s | %.0f ms | %d MiB |\n' "$t" "$(echo "$med * 1000" | bc -l)" "$((rss / 1024))"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
