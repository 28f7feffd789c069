#!/usr/bin/env bash
# ALTI+ and value zeroing (issue 54) against the translation they explain, side by side in one run (bench_decoding's
# BM_Contributions: method -1 = the translation, beam 4 with every map as the app shows it; method 0 = ALTI+ of
# that translation, one teacher-forced pass and every attention block decomposed; method 1 = value zeroing, every
# layer recomputed once per key; method 2 = contrastive at the middle step against its runner-up: the saliency of
# the difference and its value zeroing, the model rerun from each layer once per piece), on
#   1. the bundled model (multi30k-de-en, 3+3 layers x 256) and a caption;
#   2. OPUS-MT base shape: 6+6 layers, d_model 512, 8 heads, feed-forward 2048, 54,688 tokens (random weights,
#      scripts/ct2_reference.py make, as scripts/bench_compute.sh), a sentence of 20 pieces, the output capped at
#      20 pieces (a random model rarely ends on its own).
#   scripts/bench_contributions.sh [WORK]      Environment: RUNS=3 (repetitions; the median is reported),
#   THREADS (ATTNLAB_THREADS; default the policy's), BIN=build/bin, PY=/usr/bin/python3
# Prints the load before and after: the ratio is what to read on a shared machine, not the milliseconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$root/build/bin}
RUNS=${RUNS:-3}
PY=${PY:-/usr/bin/python3}
work=${1:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
[ -n "${THREADS:-}" ] && export ATTNLAB_THREADS=$THREADS
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"

m="$work/opus-base"
[ -f "$m/model.bin" ] || "$PY" "$root/scripts/ct2_reference.py" make --out "$m" --d-model 512 --layers 6 --heads 8 \
  --ffn 2048 --vocab-size 54688 --share-embeddings --tie-projection --seed 1 >/dev/null
opus_sentence=$("$PY" -c "import json,sys; v=json.load(open(sys.argv[1])); print(' '.join(v[100 + 37 * k] for k in range(20)))" \
  "$m/shared_vocabulary.json")

# One row: MODEL LABEL SENTENCE MAX_LEN
row() {
  ATTNLAB_BENCH_MODEL=$1 ATTNLAB_BENCH_SENTENCE=$3 ATTNLAB_BENCH_MAX_LEN=$4 "$BIN/bench_decoding" \
    --benchmark_filter='BM_Contributions' --benchmark_repetitions="$RUNS" --benchmark_format=json \
    >"$work/bench.json" 2>/dev/null
  "$PY" - "$work/bench.json" "$2" <<'PYEOF'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
times = {}
pieces = ""
for b in runs:
    if b.get("run_type") == "aggregate":
        continue
    method = int(b["name"].split("method:")[1].split("/")[0])
    times.setdefault(method, []).append(b["real_time"])
    pieces = "%d -> %d" % (b["source_pieces"], b["target_pieces"])
t, a, v, c = (statistics.median(times[m]) for m in (-1, 0, 1, 2))
print("| %s | %s | %.0f ms | %.0f ms (%.2f) | %.0f ms (%.2f) | %.0f ms (%.2f) |"
      % (sys.argv[2], pieces, t, a, a / t, v, v / t, c, c / t))
PYEOF
}
printf '\n| model | pieces (source -> target) | translation, beam 4, every map | ALTI+ (/ translation) | value zeroing (/ translation) | contrastive (/ translation) |\n'
printf '| --- | --- | ---: | ---: | ---: | ---: |\n'
row "" "multi30k-de-en (3+3 x 256)" \
  "Ein Mann mit einer roten Jacke fährt mit seinem Fahrrad über eine alte Brücke in der Stadt." ""
row "$m" "OPUS-MT base shape (6+6 x 512, 54,688 tokens)" "$opus_sentence" 20
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
