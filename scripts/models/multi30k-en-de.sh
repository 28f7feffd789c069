#!/usr/bin/env bash
# Reproduces the bundled en->de model (resources/models/multi30k-en-de) end to end:
#   scripts/models/multi30k-en-de.sh DATA_DIR
# 1. the base run: the reference's settings, dropout 0.1, 3,432 steps (scripts/train_bundled_model.sh);
# 2. annealing its best checkpoint: 6 epochs (798 steps), dropout 0.1, the learning rate
#    falling linearly to 0 (--decay-steps), so that the last epoch checkpoints settle and average well;
# 3. packaging: average vs best on val, test once, confidence threshold, model card (scripts/package_model.sh).
# Both stages record the attention history (docs/attention-history.md); the annealing continues the
# base run's as its next stage. Run it again after a stop: a finished stage is skipped, a started one continues (--resume). DATA_DIR holds Multi30k
# task 1's train/val/test_2016_flickr .de/.en(.gz).
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${1:?usage: scripts/models/multi30k-en-de.sh DATA_DIR}
resume() { [ -d "$1/checkpoints/latest" ] && echo --resume || true; }
cli=${ATTNLAB_CLI:-build/bin/attnlab-cli}
runs=${ATTNLAB_RUNS:-runs}  # where the runs go (outside the work tree for a run over many sessions)
base=$runs/multi30k-en-de run=$runs/multi30k-en-de-ft
[ -f "$base/model/config.json" ] || scripts/train_bundled_model.sh "$data" en de --max-steps 3432 --time-budget 0 $(resume "$base")
[ -f "$run/model/config.json" ] ||
  "$cli" train --data "$data" --src en --tgt de --output "$run" --init-from "$base/model" --dropout 0.1 \
    --batch-tokens 4096 --label-smoothing 0.1 --lr-mul 0.054 --warmup 100 --max-steps 798 --decay-steps 798 \
    --seed 3 --save-every-minutes 10 --log-every 50 --keep-epoch-checkpoints 6 --record-attention \
    --device "${ATTNLAB_TRAIN_DEVICE:-cpu}" $(resume "$run")
scripts/package_model.sh "$data" "$run" resources/models/multi30k-en-de en de --last 5 \
  --notes scripts/models/multi30k-en-de.notes.md --reproduce scripts/models/multi30k-en-de.reproduce.md
