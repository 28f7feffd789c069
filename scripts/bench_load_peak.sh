#!/usr/bin/env bash
# Quantized while reading (issue 53, item 3): the loading peak and what stays resident after it, for models of
# the three multilingual shapes (NLLB-200 600M, M2M100 418M, mBART-50) in each compute type, from each format
# the big models come in.
#   scripts/bench_load_peak.sh HF_MULTILINGUAL_DIR [WORK]
#     HF_MULTILINGUAL_DIR  the real models' JSON files, e.g. ../shared/data/hf-multilingual (as
#                          scripts/bench_multilingual.sh takes it)
#     WORK      where the models go (default: a temporary directory); each is removed once measured, so that
#               at most two (a Hugging Face folder and the package imported from it, 2.3-2.5 GiB each) are on disk
#   Environment: FAMILIES="nllb m2m100 mbart50", TYPES="float32 int8 bfloat16" (bfloat16 left out where the
#     processor lacks its instructions), FORMATS="hf package ct2", BIN=build/bin
#
# The models (random weights, the real shapes: 12+12 layers x 1024, 16 heads, FFN 4096, the real vocabulary):
#   hf       scripts/hf_multilingual_reference.py make --family F --from REALDIR ... --format safetensors (F32)
#   package  `attnlab-cli import --from` that folder (AttnLab's model.safetensors)
#   ct2      scripts/ct2_reference.py make ... --share-embeddings --tie-projection --norm pre (model.bin, float32)
# Each load: `attnlab-cli translate -m M --compute-type T --beam 1 --max-len 4` with its input a FIFO; once it
# waits on that input (the model loaded: /proc/PID/syscall is poll or read), VmHWM (the peak so far: the
# load's) and VmRSS (what the loaded model holds) are read from /proc/PID/status; then one line is written and
# the process ends. The bare process (the bundled-size CTranslate2 model of width 32) is measured the same way.
# Prints a markdown table; nothing is asserted.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
real_root=$(realpath "${1:?usage: scripts/bench_load_peak.sh HF_MULTILINGUAL_DIR [WORK]}")
if [ -n "${2:-}" ]; then
  work=$(mkdir -p "$2" && realpath "$2")
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
BIN=${BIN:-$root/build/bin}
FAMILIES=${FAMILIES:-"nllb m2m100 mbart50"}
TYPES=${TYPES:-"float32 int8 bfloat16"}
FORMATS=${FORMATS:-"hf package ct2"}
py=/usr/bin/python3
grep -q avx512_bf16 /proc/cpuinfo || TYPES=${TYPES/bfloat16/}
cli="$BIN/attnlab-cli"
declare -A REALDIR=([nllb]=nllb-200-distilled-600M [m2m100]=m2m100_418M [mbart50]=mbart-large-50-many-to-many-mmt)
declare -A VOCAB=([nllb]=256206 [m2m100]=128112 [mbart50]=250054)
declare -A LANGS=([nllb]="--src-lang eng_Latn --tgt-lang fra_Latn" [m2m100]="--src-lang en --tgt-lang fr"
  [mbart50]="--src-lang en_XX --tgt-lang fr_XX")
shape=(--d-model 1024 --layers 12 --heads 16 --ffn 4096)

# measure MODEL TYPE [translate options...] -> "peak_MiB resident_MiB seconds"
measure() {
  local model=$1 type=$2
  shift 2
  local fifo="$work/input.fifo" start pid s=""
  rm -f "$fifo" && mkfifo "$fifo"
  start=$(date +%s.%N)
  "$cli" translate -m "$model" --device cpu --compute-type "$type" --beam 1 --max-len 4 --max-len-ratio 0 "$@" \
    <"$fifo" >/dev/null 2>"$work/measure.err" &
  pid=$!
  exec 3>"$fifo"
  # the launcher may re-execute itself: follow the process that opened the model (the newest of that name)
  while kill -0 "$pid" 2>/dev/null; do
    local p
    p=$(pgrep -n -f "attnlab-cli.* -m $model " || echo "$pid")
    s=$(cut -d' ' -f1,2 "/proc/$p/syscall" 2>/dev/null || true)
    case "$s" in
    "7 "* | "0 0x0" | "271 "*)
      local hwm rss
      hwm=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$p/status")
      rss=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$p/status")
      echo "$hwm $rss $(echo "$(date +%s.%N) - $start" | bc -l | xargs printf '%.0f')"
      break
      ;;
    esac
    sleep 0.2
  done
  echo "a" >&3
  exec 3>&-
  wait "$pid" || { cat "$work/measure.err" >&2; return 1; }
}

echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
bare="$work/bare"
"$py" "$root/scripts/ct2_reference.py" make --out "$bare" --d-model 32 --layers 2 --heads 4 --ffn 64 \
  --share-embeddings --tie-projection >/dev/null
read -r bare_peak bare_rss _ < <(measure "$bare" float32)
echo "bare process (a CTranslate2 model of width 32): peak $bare_peak MiB, resident $bare_rss MiB"
printf '\n| shape | format | compute type | peak (load) | resident after | above the bare process: peak / resident | peak / resident | load (s) |\n'
printf '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n'
row() {  # family format dir [options]
  local fam=$1 fmt=$2 dir=$3
  shift 3
  for t in $TYPES; do
    read -r peak rss secs < <(measure "$dir" "$t" "$@")
    printf '| %s | %s | %s | %s MiB | %s MiB | %s / %s MiB | %.2f | %s |\n' "$fam" "$fmt" "$t" "$peak" "$rss" \
      "$((peak - bare_rss))" "$((rss - bare_rss))" "$(echo "$peak / $rss" | bc -l)" "$secs"
  done
}
for fam in $FAMILIES; do
  hf="$work/$fam-hf" pkg="$work/$fam-package" ct2="$work/$fam-ct2"
  # shellcheck disable=SC2086
  if [[ " $FORMATS " == *" hf "* || " $FORMATS " == *" package "* ]]; then
    "$py" "$root/scripts/hf_multilingual_reference.py" make --family "$fam" --from "$real_root/${REALDIR[$fam]}" \
      --out "$hf" "${shape[@]}" --vocab-size "${VOCAB[$fam]}" --seed 1 --format safetensors --dtype F32 >/dev/null
    [[ " $FORMATS " == *" hf "* ]] && row "$fam" "Hugging Face safetensors" "$hf" ${LANGS[$fam]}
    if [[ " $FORMATS " == *" package "* ]]; then
      "$cli" import --from "$hf" -o "$pkg" >/dev/null
      rm -rf "$hf"
      row "$fam" "AttnLab package" "$pkg" ${LANGS[$fam]}
    fi
    rm -rf "$hf" "$pkg"
  fi
  if [[ " $FORMATS " == *" ct2 "* ]]; then
    "$py" "$root/scripts/ct2_reference.py" make --out "$ct2" "${shape[@]}" --vocab-size "${VOCAB[$fam]}" \
      --share-embeddings --tie-projection --norm pre --seed 1 >/dev/null
    row "$fam" "CTranslate2 model.bin" "$ct2"
    rm -rf "$ct2"
  fi
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
