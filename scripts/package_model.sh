#!/usr/bin/env bash
# Turns a finished training run into a bundled model package:
#   scripts/package_model.sh DATA_DIR RUN DEST SRC TGT [--last N] [--notes FILE] [--reproduce FILE]
# averages the last N epoch checkpoints, picks the better of {best checkpoint, average} on the
# validation set (beam 5, alpha 0.7), measures beam 1/5/10 and alpha 0.6/0.8/1.0 on val for the card,
# scores the pick once on test_2016_flickr, calibrates its confidence threshold on val, and writes
# DEST with MODEL_CARD.md (the trainer's card + figures + NOTES + REPRODUCE) and training_log.tsv.
# Steps whose output is newer than their input are not repeated.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/package_model.sh DATA_DIR RUN DEST SRC TGT [--last N] [--notes FILE] [--reproduce FILE]"
data=${1:?$usage} run=${2:?$usage} dest=${3:?$usage} src=${4:?$usage} tgt=${5:?$usage}
shift 5
last=5 notes= reproduce=
while [ $# -gt 0 ]; do
  case "$1" in
    --last) last=$2; shift 2 ;;
    --notes) notes=$2; shift 2 ;;
    --reproduce) reproduce=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
cli=${ATTNLAB_CLI:-build/bin/attnlab-cli}
find1() { for f in "$data/$1" "$data/$1.gz"; do [ -f "$f" ] && { echo "$f"; return; }; done; echo "missing $data/$1(.gz)" >&2; exit 1; }
val_src=$(find1 "val.$src") val_ref=$(find1 "val.$tgt")
test_src=$(find1 "test_2016_flickr.$src") test_ref=$(find1 "test_2016_flickr.$tgt")
fresh() { [ -f "$1" ] && [ "$1" -nt "$2" ]; }
bleu() { sed -n 's/^BLEU = \([0-9.]*\).*/\1/p' "$1"; }
chrf() { sed -n 's/^chrF2 = //p' "$1"; }

fresh "$run/averaged/model.safetensors" "$run/log.tsv" || "$cli" average --run "$run" --last "$last" -o "$run/averaged"
for m in model averaged; do
  fresh "$run/$m.val.eval" "$run/$m/model.safetensors" ||
    "$cli" eval --model "$run/$m" --src "$val_src" --ref "$val_ref" --beam 5 --output "$run/$m.val.hyp" > "$run/$m.val.eval"
  echo "validation, beam 5, $m: $(head -1 "$run/$m.val.eval")"
done
avg_bleu=$(bleu "$run/averaged.val.eval") best_bleu=$(bleu "$run/model.val.eval")
best_row=$(awk -F'\t' 'NR > 1 && $8 > b { b = $8; r = "epoch " $1 ", step " $2 } END { print r }' "$run/log.tsv")
if awk -v a="$avg_bleu" -v b="$best_bleu" 'BEGIN { exit !(a >= b) }'; then
  pick=averaged what="the parameter average of the last $last epoch checkpoints"
else
  pick=model what="the checkpoint with the best greedy validation BLEU during training ($best_row)"
fi
# Decoding levers, on val only.
for setting in "1 0.7" "10 0.7" "5 0.6" "5 0.8" "5 1.0"; do
  set -- $setting
  f="$run/$pick.val.b$1a$2.eval"
  fresh "$f" "$run/$pick/model.safetensors" ||
    "$cli" eval --model "$run/$pick" --src "$val_src" --ref "$val_ref" --beam "$1" --alpha "$2" > "$f"
done
if ! { fresh "$run/test.eval" "$run/$pick/model.safetensors" && grep -q "^model: $run/$pick\$" "$run/test.model" 2>/dev/null; }; then
  start=$(date +%s.%N)
  "$cli" eval --model "$run/$pick" --src "$test_src" --ref "$test_ref" --beam 5 --output "$run/test_2016_flickr.hyp" > "$run/test.eval"
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' > "$run/test.seconds"
  echo "model: $run/$pick" > "$run/test.model"
fi
echo "test_2016_flickr, beam 5, $pick: $(head -1 "$run/test.eval")"

rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
cp "$run/$pick/config.json" "$run/$pick/model.safetensors" "$run/$pick/tokenizer.model" "$dest.tmp/"
cp "$run/log.tsv" "$dest.tmp/training_log.tsv"
[ -f "$run/$pick/attention_history.bin" ] && cp "$run/$pick/attention_history.bin" "$dest.tmp/"
[ -f "$dest/examples.tsv" ] && cp "$dest/examples.tsv" "$dest.tmp/"
[ -f "$dest/alignments.txt" ] && cp "$dest/alignments.txt" "$dest.tmp/"
{
  sed '/^## Confidence/,$d' "$run/model/MODEL_CARD.md" |
    sed "s/This package is the best validation BLEU checkpoint./This package is $what. Chosen on the validation set (beam 5): best checkpoint $best_bleu BLEU, average of the last $last epoch checkpoints $avg_bleu./"
  params=$("$cli" inspect --model "$dest.tmp" | awk '$1 == "total" { print $2 }')
  echo "Size: $params parameters (the tied embedding counted once), stored as F32 in model.safetensors ($(du -m "$dest.tmp/model.safetensors" | cut -f1) MB)."
  echo
  echo "## Evaluation (attnlab-cli eval: sacreBLEU's default BLEU, beam 5, length penalty 0.7)"
  echo
  echo "| set | sentences | BLEU | chrF2 |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| validation (val) | $(zcat -f "$val_ref" | wc -l) | $(bleu "$run/$pick.val.eval") | $(chrf "$run/$pick.val.eval") |"
  echo "| test_2016_flickr | $(zcat -f "$test_ref" | wc -l) | $(bleu "$run/test.eval") | $(chrf "$run/test.eval") |"
  echo
  echo '```'
  cat "$run/test.eval"
  echo '```'
  echo
  echo "Decoding the $(zcat -f "$test_src" | wc -l) test sentences took $(cat "$run/test.seconds") s on the machine above (batches of 32)."
  echo
  echo "Decoding levers on val (BLEU): beam 1 $(bleu "$run/$pick.val.b1a0.7.eval"), beam 5 $(bleu "$run/$pick.val.eval"), beam 10 $(bleu "$run/$pick.val.b10a0.7.eval") (α 0.7); α 0.6 $(bleu "$run/$pick.val.b5a0.6.eval"), 0.8 $(bleu "$run/$pick.val.b5a0.8.eval"), 1.0 $(bleu "$run/$pick.val.b5a1.0.eval") (beam 5). The app and \`eval\` default to beam 5, α 0.7."
  echo
  [ -n "$notes" ] && { cat "$notes"; echo; }
  echo "## Where the data comes from"
  echo
  echo "Multi30k task 1 (Elliott et al., 2016), https://github.com/multi30k/dataset, data/task1/raw:"
  echo "train (29,000 pairs) for training, val (1,014) for checkpoint selection, test_2016_flickr (1,000) scored once."
  echo "The corpus is not part of this repository."
  echo
  [ -n "$reproduce" ] && cat "$reproduce"
} > "$dest.tmp/MODEL_CARD.md"
"$cli" calibrate --model "$dest.tmp" --src "$val_src"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
du -sh "$dest"
