#!/usr/bin/env bash
# Weights packed once (XNNPACK) against at::linear (issue 25): the same 1,000 test_2016_flickr
# sentences translated both ways (beam 5) by each bundled model, in one run. Prints, per model, the
# BLEU and chrF of each, how many translations are identical, and the time of each.
#   scripts/bench_packed.sh DATA_DIR            # DATA_DIR holds test_2016_flickr.{de,en}.gz
#   BATCH=32 scripts/bench_packed.sh DATA_DIR   # batches of 32 (default 1)
# With BATCH=1 (the default) each sentence is decoded alone on one thread, as the app translates
# what is typed: every product goes through the packed weights, so this is the check that they keep
# the translations. Batches of 32 run on every core, where products of more than 32 rows keep
# at::linear (core/src/model/packed_linear.h): that run measures throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/bench_packed.sh DATA_DIR}
cli=build/bin/attnlab-cli
batch=${BATCH:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for lang in de en; do zcat "$data/test_2016_flickr.$lang.gz" >"$work/test.$lang"; done

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg); batches of $batch"
printf '| model | weights | BLEU | chrF | seconds | identical translations |\n| --- | --- | ---: | ---: | ---: | ---: |\n'
for pair in de-en en-de; do
  src=${pair%-*} trg=${pair#*-}
  for mode in packed linear; do
    flag=$([ $mode = linear ] && echo --no-packed-weights || true)
    start=$(date +%s.%N)
    # shellcheck disable=SC2086  # $flag is empty or one flag
    "$cli" eval --model "multi30k-$pair" $flag --batch-size "$batch" --src "$work/test.$src" --ref "$work/test.$trg" \
      --output "$work/$pair.$mode.txt" >"$work/$pair.$mode.score" 2>/dev/null
    secs=$(echo "$(date +%s.%N) - $start" | bc -l)
    bleu=$(grep -o 'BLEU[ =:]*[0-9.]*' "$work/$pair.$mode.score" | head -1 | grep -o '[0-9.]*$')
    chrf=$(sed -n 's/^chrF2* = \([0-9.]*\).*/\1/p' "$work/$pair.$mode.score")
    same=
    if [ $mode = linear ]; then
      same=$(paste -d '\t' "$work/$pair.packed.txt" "$work/$pair.linear.txt" | awk -F '\t' '$1 == $2 { n++ } END { printf "%d of %d", n, NR }')
    fi
    name=$([ $mode = packed ] && echo "packed once (default)" || echo "at::linear (--no-packed-weights)")
    printf '| %s | %s | %s | %s | %.1f | %s |\n' "multi30k-$pair" "$name" "$bleu" "$chrf" "$secs" "$same"
  done
done
