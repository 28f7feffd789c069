#!/usr/bin/env bash
# The base stage of a bundled Multi30k model: the reference's settings, trained (or, with --resume,
# continued) with attnlab-cli train.
#   scripts/train_bundled_model.sh DATA_DIR SRC TGT [more attnlab-cli train flags, e.g. --resume]
# DATA_DIR holds train/val .de/.en(.gz) (https://github.com/multi30k/dataset, data/task1/raw).
# Output: runs/multi30k-SRC-TGT/ (checkpoints, log.tsv, steps.tsv, attention_history.bin, model/), under
# $ATTNLAB_RUNS instead of runs/ when set. The attention history is recorded (docs/attention-history.md;
# it does not change the training). scripts/models/ calls it. ATTNLAB_TRAIN_DEVICE=cuda trains on a GPU
# (the default is the CPU); ATTNLAB_CLI names another attnlab-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/train_bundled_model.sh DATA_DIR SRC TGT [flags]"
data=${1:?$usage} src=${2:?$usage} tgt=${3:?$usage}
shift 3
exec "${ATTNLAB_CLI:-build/bin/attnlab-cli}" train --data "$data" --src "$src" --tgt "$tgt" \
  --output "${ATTNLAB_RUNS:-runs}/multi30k-$src-$tgt" --record-attention \
  --vocab-size 8000 --layers 3 --heads 8 --d-model 256 --d-inner 1024 --d-k 32 --d-v 32 --dropout 0.1 \
  --share-proj true --share-emb true --scale-emb-or-prj emb \
  --batch-tokens 4096 --label-smoothing 0.1 --lr-mul 0.32 --warmup 400 --seed 1 \
  --epochs 40 --time-budget 190 --save-every-minutes 10 --log-every 50 --device "${ATTNLAB_TRAIN_DEVICE:-cpu}" "$@"
