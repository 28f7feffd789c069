#!/usr/bin/env bash
# Training throughput, side by side in one run: attnlab-cli train against the same model, ids,
# batches and thread count trained through PyTorch's Python API (scripts/bench_train_python.py),
# with Debian's default BLAS and with the OpenMP OpenBLAS that AttnLab loads.
#   scripts/bench_train.sh DATA_DIR SPM_MODEL [CLI ...]
# Each CLI given is timed (default build/bin/attnlab-cli), e.g. an older build for comparison.
# Prints target tokens/s; the C++ figure is steps.tsv's window over steps 16-45 (after warm-up).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/bench_train.sh DATA_DIR SPM_MODEL [CLI ...]}
spm=${2:?usage: scripts/bench_train.sh DATA_DIR SPM_MODEL [CLI ...]}
shift 2
clis=("$@")
[ ${#clis[@]} -gt 0 ] || clis=(build/bin/attnlab-cli)
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for cli in "${clis[@]}"; do
  out="$tmp/run"
  rm -rf "$out"
  "$cli" train --data "$data" --src de --tgt en --output "$out" --tokenizer "$spm" \
    --layers 3 --heads 8 --d-model 256 --d-inner 1024 --d-k 32 --d-v 32 --dropout 0.1 \
    --share-proj true --share-emb true --scale-emb-or-prj emb --batch-tokens 4096 --seed 1 \
    --max-steps 45 --log-every 15 --threads "$threads" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
  # steps.tsv: step epoch elapsed_s loss lr tgt_tokens_per_s — mean rate of the windows after the first
  rate=$(awk -F'\t' 'NR > 2 { s += $6; n++ } END { printf "%.0f", s / n }' "$out/steps.tsv")
  echo "$cli: $rate target tokens/s"
done
/usr/bin/python3 scripts/bench_train_python.py --spm "$spm" --data "$data" --steps 30 --warmup-steps 5 --threads "$threads"
LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
  /usr/bin/python3 scripts/bench_train_python.py --spm "$spm" --data "$data" --steps 30 --warmup-steps 5 --threads "$threads" |
  sed 's/^python:/python (OpenMP OpenBLAS):/'
