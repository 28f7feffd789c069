#!/usr/bin/env bash
# Turns the finished training run into the bundled model (resources/models/multi30k-de-en):
# averages the last epoch checkpoints, picks the better of {best checkpoint, average} on the
# validation set (beam 5), scores that one once on test_2016_flickr (beam 5), copies the package
# and writes its MODEL_CARD.md with the figures and the commands.
#   scripts/package_bundled_model.sh DATA_DIR [--last N]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: scripts/package_bundled_model.sh DATA_DIR [--last N]}
last=5
[ "${2:-}" = "--last" ] && last=${3:?--last needs N}
run=runs/multi30k-de-en
cli=build/bin/attnlab-cli
dest=resources/models/multi30k-de-en
find1() { for f in "$data/$1" "$data/$1.gz"; do [ -f "$f" ] && { echo "$f"; return; }; done; echo "missing $data/$1(.gz)" >&2; exit 1; }
val_de=$(find1 val.de) val_en=$(find1 val.en) test_de=$(find1 test_2016_flickr.de) test_en=$(find1 test_2016_flickr.en)

# Steps whose output is newer than their input are not repeated (rerunning only rewrites the card).
fresh() { [ -f "$1" ] && [ "$1" -nt "$2" ]; }
fresh "$run/averaged/model.safetensors" "$run/log.tsv" || "$cli" average --run "$run" --last "$last" -o "$run/averaged"
cp "$run/model/MODEL_CARD.md" "$run/model/training_log.tsv" "$run/averaged/" 2>/dev/null || true
bleu() { sed -n 's/^BLEU = \([0-9.]*\).*/\1/p' "$1"; }
for m in model averaged; do
  fresh "$run/$m.val.eval" "$run/$m/model.safetensors" ||
    "$cli" eval --model "$run/$m" --src "$val_de" --ref "$val_en" --beam 5 --output "$run/$m.val.hyp" > "$run/$m.val.eval"
  echo "validation, beam 5, $m: $(head -1 "$run/$m.val.eval")"
done
best_row=$(awk -F'\t' 'NR > 1 && $8 > b { b = $8; r = "epoch " $1 ", step " $2 } END { print r }' "$run/log.tsv")
avg_bleu=$(bleu "$run/averaged.val.eval") best_bleu=$(bleu "$run/model.val.eval")
if awk -v a="$avg_bleu" -v b="$best_bleu" 'BEGIN { exit !(a >= b) }'; then
  pick=averaged; what="the parameter average of the last $last epoch checkpoints"
else
  pick=model; what="the checkpoint with the best greedy validation BLEU during training ($best_row)"
fi
choice="Chosen on the validation set (beam 5): best checkpoint $best_bleu BLEU, average of the last $last epoch checkpoints $avg_bleu."
if ! { fresh "$run/test.eval" "$run/$pick/model.safetensors" && grep -q "^model: $run/$pick\$" "$run/test.model" 2>/dev/null; }; then
  start=$(date +%s.%N)
  "$cli" eval --model "$run/$pick" --src "$test_de" --ref "$test_en" --beam 5 --output "$run/test_2016_flickr.hyp" > "$run/test.eval"
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' > "$run/test.seconds"
  echo "model: $run/$pick" > "$run/test.model"
fi
echo "test_2016_flickr, beam 5, $pick: $(head -1 "$run/test.eval")"

rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
cp "$run/$pick/config.json" "$run/$pick/model.safetensors" "$run/$pick/tokenizer.model" "$dest.tmp/"
cp "$run/log.tsv" "$dest.tmp/training_log.tsv"
{
  sed '/^## Reproduce/,$d' "$run/model/MODEL_CARD.md" | sed "s/This package is the best validation BLEU checkpoint./This package is $what. $choice/"
  params=$("$cli" inspect --model "$dest.tmp" | awk '$1 == "total" { print $2 }')
  echo "Size: $params parameters (the tied embedding counted once), stored as F32 in model.safetensors ($(du -m "$dest.tmp/model.safetensors" | cut -f1) MB)."
  echo
  echo "## Evaluation (attnlab-cli eval: sacreBLEU's default BLEU, beam 5, length penalty 0.7)"
  echo
  echo "| set | sentences | BLEU | chrF2 |"
  echo "| --- | ---: | ---: | ---: |"
  for s in "validation (val):$run/$pick.val.eval:$val_en" "test_2016_flickr:$run/test.eval:$test_en"; do
    IFS=: read -r name file ref <<<"$s"
    n=$( (zcat -f "$ref") | wc -l)
    echo "| $name | $n | $(bleu "$file") | $(sed -n 's/^chrF2 = //p' "$file") |"
  done
  echo
  echo '```'
  cat "$run/test.eval"
  echo '```'
  echo
  echo "Decoding the $(zcat -f "$test_de" | wc -l) test sentences took $(cat "$run/test.seconds") s on the machine above (batches of 32)."
  echo
  if [ -f "$run/notes.md" ]; then
    echo "## Notes on this run"
    echo
    cat "$run/notes.md"
    echo
  fi
  echo "## Where the data comes from"
  echo
  echo "Multi30k task 1 (Elliott et al., 2016), https://github.com/multi30k/dataset, data/task1/raw:"
  echo "train (29,000 pairs) for training, val (1,014) for checkpoint selection, test_2016_flickr (1,000) scored once."
  echo "The corpus is not part of this repository."
  echo
  echo "## Reproduce"
  echo
  echo '```sh'
  echo "scripts/setup.sh                                    # packages + build"
  echo "scripts/train_bundled_model.sh DATA                 # in the background; resume with: ... DATA --resume"
  echo "scripts/package_bundled_model.sh DATA --last $last    # average, select on val, score test, write this package"
  echo '```'
  echo
  echo "where DATA holds train/val/test_2016_flickr .de/.en (.gz). scripts/train_bundled_model.sh runs:"
  echo
  echo '```sh'
  sed -n '/^exec/,/[^\\]$/p' scripts/train_bundled_model.sh | sed 's/^exec "${ATTNLAB_CLI:-build\/bin\/attnlab-cli}"/attnlab-cli/; s/"\$data"/DATA/; s/ "\$@"//'
  echo '```'
} > "$dest.tmp/MODEL_CARD.md"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
du -sh "$dest"
