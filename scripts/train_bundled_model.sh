#!/usr/bin/env bash
# Trains (or, with --resume, continues) the bundled Multi30k de->en model with attnlab-cli train.
#   scripts/train_bundled_model.sh DATA_DIR [--resume]
# DATA_DIR holds train.de.gz, train.en.gz, val.de.gz, val.en.gz (https://github.com/multi30k/dataset,
# data/task1/raw). Output: runs/multi30k-de-en/ (checkpoints, log.tsv, steps.tsv, model/).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/train_bundled_model.sh DATA_DIR [--resume]}
shift
exec "${ATTNLAB_CLI:-build/bin/attnlab-cli}" train --data "$data" --src de --tgt en --output runs/multi30k-de-en \
  --vocab-size 8000 --layers 3 --heads 8 --d-model 256 --d-inner 1024 --d-k 32 --d-v 32 --dropout 0.1 \
  --share-proj true --share-emb true --scale-emb-or-prj emb \
  --batch-tokens 4096 --label-smoothing 0.1 --lr-mul 0.32 --warmup 400 --seed 1 \
  --epochs 40 --time-budget 190 --save-every-minutes 10 --log-every 50 "$@"
