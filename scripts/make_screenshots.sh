#!/usr/bin/env bash
# The README's screenshots, made by the app itself (--screenshot saves the window, --export one view),
# and every step of every bundled lesson in presenter mode on a 1280 x 720 and a 1920 x 1080 screen.
#   scripts/make_screenshots.sh [MODEL_DIR] [--lessons-to DIR]
#   scripts/make_screenshots.sh --lessons-only [--lessons-to DIR]
# Writes docs/screenshots/*.png (the README's), and the lessons' steps to DIR (default
# build/lesson-screenshots) as LESSON/WIDTHxHEIGHT/step-NN.png: looked at, not committed.
# Runs offscreen; needs build/bin/attnlab.
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
app=build/bin/attnlab
model=()
lessons_to=build/lesson-screenshots
lessons_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --lessons-to) [ -n "${2:-}" ] || { echo "$0: --lessons-to needs a folder" >&2; exit 2; }; lessons_to=$2; shift 2 ;;
    --lessons-only) lessons_only=true; shift ;;
    -*) echo "$0: unknown option $1 (MODEL_DIR, --lessons-to DIR, --lessons-only)" >&2; exit 2 ;;
    *) model=(--model "$1"); shift ;;
  esac
done
out=docs/screenshots
mkdir -p "$out"
screen=$(mktemp --suffix=.json)
trap 'rm -f "$screen"' EXIT
screen_size() {
  echo "{\"screens\": [{\"name\": \"s\", \"x\": 0, \"y\": 0, \"width\": $1, \"height\": $2, \"logicalDpi\": 96, \"logicalBaseDpi\": 96}]}" >"$screen"
}
# Every step of every bundled lesson at both projector sizes: one app per lesson and screen, which
# steps through the lesson as PageDown does (--screenshot-steps).
every_lesson_step() {
  for size in "1280 720" "1920 1080"; do
    set -- $size
    screen_size "$1" "$2"
    for file in resources/lessons/*.json; do
      dir="$lessons_to/$(basename "$file" .json)/${1}x${2}"
      mkdir -p "$dir" && rm -f "$dir"/step-[0-9]*.png  # only the pictures this script writes there
      QT_QPA_PLATFORM="offscreen:configfile=$screen" "$app" "${model[@]}" --lesson "$file" --presenter \
        --screenshot-steps "$dir"
    done
  done
  echo "every lesson step: $(find "$lessons_to" -name 'step-*.png' | wc -l) pictures under $lessons_to"
}
if $lessons_only; then
  every_lesson_step
  exit 0
fi
text="Zwei junge Männer spielen Fußball auf einer Wiese."
shot() { "$app" "${model[@]}" --text "$text" "$@"; }
shot --view cross --layer 2 --head 8 --screenshot "$out/attention-cross.png"
shot --view encoder --layer 0 --head 3 --screenshot "$out/attention-encoder.png"
shot --view decoder --layer 1 --head 8 --screenshot "$out/attention-decoder.png"
shot --tab positional --screenshot "$out/positional.png"
shot --tab model --screenshot "$out/model.png"
shot --view cross --layer 2 --head 5 --export "$out/cross-layer2-head5.png"
# Projector size (20 pt: every widget and plot label), and a sentence the model is not sure of.
shot --view cross --layer 2 --head 8 --text-size 20 --screenshot "$out/attention-cross-20pt.png"
"$app" "${model[@]}" --text "Der Compiler meldet einen Fehler in Zeile zwölf." --screenshot "$out/low-confidence.png"
shot --tab model --export "$out/training.png"
# Teaching: steps of the bundled lessons in presenter mode on a 1920 x 1080 screen, as a class sees
# them (the lesson sets sentence, tab, view and the part in sight; the offscreen screen's size comes
# from a config file).
screen_size 1920 1080
lesson() {
  QT_QPA_PLATFORM="offscreen:configfile=$screen" "$app" "${model[@]}" --lesson "resources/lessons/$1.json" \
    --lesson-step "$2" --presenter --screenshot "$out/$3"
}
lesson transformer-tour 13 decoding-beam.png
lesson transformer-tour 7 weight.png
lesson transformer-tour 4 inputs.png
lesson transformer-tour 8 masks.png
lesson transformer-tour 14 what-if.png
lesson minimal-pairs 3 minimal-pairs.png
lesson attention-learned 2 lesson-attention-learned.png
# and one on a 1280 x 720 projector (text sized to the screen: 12 pt)
screen_size 1280 720
lesson attention-learned 1 lesson-720p.png
# Head lab (issue 12): statistics over the examples, the first example's alignment with its gold,
# and the last layer's cross-attention heads switched off.
"$app" "${model[@]}" --heads statistics --screenshot "$out/heads-statistics.png"
"$app" "${model[@]}" --heads alignment --screenshot "$out/heads-alignment.png"
"$app" "${model[@]}" --text "Zwei Hunde spielen im Schnee." --heads ablation \
  --ablate cross:2:0,cross:2:1,cross:2:2,cross:2:3,cross:2:4,cross:2:5,cross:2:6,cross:2:7 --screenshot "$out/heads-ablation.png"
# Issue 27: what moves each produced piece, by gradient, beside the cross-attention rollout.
"$app" "${model[@]}" --text "Ein Mann mit einer roten Jacke fährt mit seinem Fahrrad über eine Brücke." --tab saliency \
  --screenshot "$out/saliency.png"
# Issue 54: the Method ALTI+ (one map per layer, all heads together) and the logit lens, as the lesson that
# sets them beside the weights shows them on a 1920 x 1080 screen.
screen_size 1920 1080
lesson beyond-attention 2 alti-plus.png
lesson beyond-attention 6 logit-lens.png
# Issue 28: a toy model trained here (about 80 s), its attention history in the Training tab.
toy=$(mktemp -d)/toy-reverse
build/bin/attnlab-cli toy --task reverse --output "$toy" >/dev/null
"$app" --model "$toy" --text "3 1 4 1 5" --tab training --view cross --layer 1 --head 2 --screenshot "$out/training-toy.png"
# Issue 28: the bundled de->en model's cross-attention (last layer, mean over heads, first probe)
# becoming diagonal: four recorded points side by side, 2 x 2 at half size (netpbm).
if build/bin/attnlab-cli history "${model[@]}" >/dev/null 2>&1; then
  frames=$(mktemp -d)
  "$app" "${model[@]}" --tab training --view cross --layer 2 --head 8 --export-animation "$frames/f.png"
  # the frame of the first point at or after each step, and the last
  pick() { build/bin/attnlab-cli history "${model[@]}" | awk -v s="$1" '$2 ~ /^[0-9]+$/ { n++; if ($2 >= s) { print n; exit } }'; }
  last=$(find "$frames" -name 'f-*.png' | wc -l)
  half() { pngtopnm "$(printf '%s/f-%03d.png' "$frames" "$1")" | pamscale 0.5; }
  pnmcat -tb <(pnmcat -lr <(half "$(pick 400)") <(half "$(pick 665)")) \
    <(pnmcat -lr <(half "$(pick 800)") <(half "$last")) | pnmtopng >"$out/cross-attention-learned.png"
fi
ls -l "$out"
every_lesson_step
