#!/usr/bin/env bash
# An OPUS-MT model of base size in AttnLab (issue 24, item 5): load time, peak memory, one-sentence
# latency with beam 4 (with and without every attention map), sentences per second, and the window's
# map drawing — the bundled de->en model measured side by side in the same run for the ratios.
#   scripts/bench_marian.sh OPUS_DIR [WORK]
#     OPUS_DIR  a real OPUS-MT directory (config.json, source.spm, target.spm, vocab.json), e.g.
#               ../shared/data/opus-mt-en-mg; its tokenizer files are used in place, never copied here
#     WORK      where the models and outputs go (default: a temporary directory, removed at the end)
#   Environment:
#     THREADS=N   LibTorch/OpenBLAS threads for every process (exported as OMP_NUM_THREADS); unset:
#                 attnlab-cli's own policy (threads by the multiply-adds of a decoding step, attnlab/device.h;
#                 "Threads by measured work (issue 53)" in docs/benchmarks.md)
#     N_LAT=12    sentences for the latency rows (lines 1..N of test_2016_flickr, en for the OPUS
#                 model, de for the bundled one)
#     N_TPUT=1000 sentences for the throughput rows; a run whose first 200 sentences extrapolate to
#                 more than 10 minutes reports those 200 instead (the table says which)
#     GUI=1       also run bench_ui (offscreen window: translation -> every map drawn); GUI=0 skips it
#     BIN=build/bin  where attnlab-cli, bench_ui, libattnlab_spm.so, attnlab-spm-check are; they are
#                 copied into WORK first, so a rebuild during the run cannot swap them
#     MULTI30K=../shared/data/multi30k  test_2016_flickr.{en,de}.gz
#
# The model: scripts/marian_reference.py make with the real opus-mt base shapes (6+6 layers,
# d_model 512, 8 heads, FFN 2048, swish, the directory's vocabulary; random weights, seed 3), as
# model.safetensors with the tied embedding stored under all four names (598 MiB), with it stored
# once (--tied-once, 278 MiB: how a real OPUS-MT model.safetensors holds it, ~298 MB on the Hub for
# opus-mt-en-de), as pytorch_model.bin (278 MiB), and imported as an AttnLab package. Random
# weights never end a sentence by themselves (any --eos-bias either stops at once or never), so the
# OPUS model's outputs are capped at the source length (--max-len-ratio 1 --max-len-offset 0):
# every sentence decodes as many steps as it has source pieces (typical 10-30). The bundled model
# (trained) stops on its own; it is run with --beam 4 too (its default is 5).
#
# Timings are whole processes (/usr/bin/time) or the per-sentence "seconds" of the --attention JSON
# (inside the translator: search + the teacher-forced pass that computes the maps + candidates).
# Latency without --attention has no JSON: it is the difference of two warm processes, the N_LAT
# sentences once and four times over (--batch-size 1), over 3·N_LAT sentences, so no load time is in
# it. "Load only" is `attnlab-cli translate` with empty input (start, load, exit), subtracted from
# the throughput runs. Medians of 3 runs for loading, of N_LAT sentences for the JSON latencies.
# Prints markdown tables; no timing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/bench_marian.sh OPUS_DIR [WORK]"
opus_src=$(realpath "${1:?$usage}")
if [ -n "${2:-}" ]; then
  work=$(mkdir -p "$2" && realpath "$2")
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
bin=${BIN:-build/bin}
multi30k=${MULTI30K:-../shared/data/multi30k}
n_lat=${N_LAT:-12}
n_tput=${N_TPUT:-1000}
gui=${GUI:-1}
if [ -n "${THREADS:-}" ]; then export OMP_NUM_THREADS=$THREADS; fi
threads_note=${THREADS:-"attnlab-cli's default policy ($(nproc) cores)"}
py=/usr/bin/python3
bundled="multi30k-de-en"
export QT_QPA_PLATFORM=offscreen

for f in config.json source.spm target.spm vocab.json; do
  [ -f "$opus_src/$f" ] || { echo "$opus_src/$f is missing" >&2; exit 2; }
done
mkdir -p "$work/bin"
for f in attnlab-cli attnlab-cli.real attnlab-spm-check libattnlab_spm.so bench_ui bench_ui.real; do  # NAME.real: app/launcher
  [ -f "$bin/$f" ] || { [ "${f%.real}" = bench_ui ] && gui=0 && continue; echo "$bin/$f is missing" >&2; exit 2; }
  cp "$bin/$f" "$work/bin/"
done
cli=$work/bin/attnlab-cli
has_import=0
help=$("$cli" --help)
grep -q '^ *import ' <<<"$help" && has_import=1

log() { echo "[bench_marian $(date +%T)] $*" >&2; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fmt() { awk -v x="$1" -v d="${2:-2}" 'BEGIN { if (x == "nan" || x == "") print "—"; else printf "%.*f", d, x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "nan" || b == "nan") print "—"; else printf "%.1f×", a / b }'; }
# timed OUT CMD...: runs CMD under /usr/bin/time, appends "wall_s maxrss_kB" to OUT
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time.tmp" "$@"
  cat "$work/time.tmp" >>"$out"
}
col() { awk -v c="$1" '{ print $c }' "$2"; }

uptime_before=$(uptime)
log "work: $work; threads: $threads_note; $uptime_before"

# ------------------------------------------------------------------ the models
make_model() {  # OUT FORMAT [extra make options]
  local out=$1 format=$2
  shift 2
  rm -rf "$out"
  $py scripts/marian_reference.py make --from "$opus_src" --out "$out" --d-model 512 --encoder-layers 6 \
    --decoder-layers 6 --heads 8 --ffn 2048 --format "$format" --seed 3 --eos-bias 8 --max-length 512 "$@" >&2
}
make_model "$work/opus-base" safetensors
make_model "$work/opus-once" safetensors --tied-once
make_model "$work/opus-bin" bin
dirs=(opus-base opus-once opus-bin)
if [ $has_import = 1 ]; then
  rm -rf "$work/opus-pkg"
  timed "$work/import.time" "$cli" import --from "$work/opus-base" --output "$work/opus-pkg" >/dev/null
  dirs+=(opus-pkg)
else
  log "attnlab-cli has no import subcommand: the package row is skipped"
fi
params=$("$cli" inspect --model "$work/opus-base" | awk '$1 == "total" { print $2 }')
bundled_params=$("$cli" inspect --model "$bundled" | awk '$1 == "total" { print $2 }')
size_mib() { du -sb "$1" | awk '{ printf "%.0f", $1 / 1048576 }'; }

# ------------------------------------------------------------------ sentences
zcat "$multi30k/test_2016_flickr.en.gz" >"$work/test.en"
zcat "$multi30k/test_2016_flickr.de.gz" >"$work/test.de"
head -n "$n_lat" "$work/test.en" >"$work/lat.en"
head -n "$n_lat" "$work/test.de" >"$work/lat.de"
opus_cap=(--max-len-ratio 1 --max-len-offset 0)
bundled_opts=(--beam 4)

# ------------------------------------------------------------------ (a) load time and peak memory
for d in "${dirs[@]}" bundled; do
  model=$work/$d
  [ "$d" = bundled ] && model=$bundled
  rm -f "$work/inspect.$d.time" "$work/inspect.$d.load"
  for _ in 1 2 3; do
    timed "$work/inspect.$d.time" "$cli" inspect --model "$model" >"$work/inspect.out"
    awk '$1 == "load" && $2 == "time" { print $3 }' "$work/inspect.out" >>"$work/inspect.$d.load"
  done
  log "inspect $d: $(tr '\n' ' ' <"$work/inspect.$d.time")"
done
# load only, through translate (the baseline subtracted from translate's process times)
for d in opus-base bundled; do
  model=$work/$d
  [ "$d" = bundled ] && model=$bundled
  rm -f "$work/empty.$d.time"
  for _ in 1 2 3; do timed "$work/empty.$d.time" "$cli" translate --model "$model" </dev/null >/dev/null; done
done
L_opus=$(col 1 "$work/empty.opus-base.time" | median)
L_bundled=$(col 1 "$work/empty.bundled.time" | median)

# ------------------------------------------------------------------ (b) latency, beam 4
# sentence_stats JSON: one line per sentence "seconds target_tokens source_tokens"; beam on stderr
sentence_stats() {
  $py - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("beam", d["decoding"]["beam_size"], file=sys.stderr)
for s in d["sentences"]:
    print(s["seconds"], len(s["target_ids"]), len(s["source_ids"]))
EOF
}
latency() {  # NAME MODEL SENTENCES [options]
  local name=$1 model=$2 sents=$3
  shift 3
  rm -f "$work/lat.$name".*
  # cold: one process per sentence (`--text S --attention`), the JSON's seconds
  while IFS= read -r line; do
    "$cli" translate --model "$model" "$@" --text "$line" --attention "$work/a.json" </dev/null >/dev/null
    sentence_stats "$work/a.json" </dev/null >>"$work/lat.$name.att" 2>"$work/beam.$name"
  done <"$sents"
  # warm: the sentences in one process, one at a time (--batch-size 1, as the app translates them);
  # once (x1) and four times over (x4), with and without the maps. (x4 - x1) / 3N is the time per
  # sentence with no load time in it (a single process's load varies by +-0.5 s on this machine).
  for _ in 1 2 3 4; do cat "$sents"; done >"$work/lat.x4"
  timed "$work/lat.$name.x1att.time" "$cli" translate --model "$model" "$@" --batch-size 1 \
    --attention "$work/w.json" <"$sents" >/dev/null
  sentence_stats "$work/w.json" >"$work/lat.$name.warmatt" 2>/dev/null
  timed "$work/lat.$name.x1plain.time" "$cli" translate --model "$model" "$@" --batch-size 1 <"$sents" >/dev/null
  timed "$work/lat.$name.x4att.time" "$cli" translate --model "$model" "$@" --batch-size 1 \
    --attention "$work/w4.json" <"$work/lat.x4" >/dev/null
  timed "$work/lat.$name.x4plain.time" "$cli" translate --model "$model" "$@" --batch-size 1 <"$work/lat.x4" >/dev/null
  log "latency $name: $(tr '\n' ' ' <"$work/beam.$name")"
}
latency opus "$work/opus-base" "$work/lat.en" "${opus_cap[@]}"
latency bundled "$bundled" "$work/lat.de" "${bundled_opts[@]}"

declare -A R
for m in opus bundled; do
  R[$m.att]=$(col 1 "$work/lat.$m.att" | median)
  R[$m.tok]=$(col 2 "$work/lat.$m.att" | median)
  R[$m.src]=$(col 3 "$work/lat.$m.att" | median)
  R[$m.att_ms_tok]=$(awk '{ print 1000 * $1 / $2 }' "$work/lat.$m.att" | median)
  R[$m.warmatt]=$(col 1 "$work/lat.$m.warmatt" | median)
  R[$m.warmatt_ms_tok]=$(awk '{ print 1000 * $1 / $2 }' "$work/lat.$m.warmatt" | median)
  R[$m.warmatt_first]=$(head -1 "$work/lat.$m.warmatt" | awk '{ print $1 }')
  n=$(wc -l <"$work/lat.$m.warmatt")
  mean_tok=$(awk '{ s += $2 } END { print s / NR }' "$work/lat.$m.warmatt")
  for v in att plain; do
    R[$m.diff$v]=$(paste "$work/lat.$m.x1$v.time" "$work/lat.$m.x4$v.time" | awk -v n="$n" '{ print ($3 - $1) / (3 * n) }')
    R[$m.diff${v}_ms_tok]=$(awk -v x="${R[$m.diff$v]}" -v t="$mean_tok" 'BEGIN { print 1000 * x / t }')
  done
done

# ------------------------------------------------------------------ (c) sentences per second
throughput() {  # NAME MODEL TEXT BATCH(or "") [options]
  local name=$1 model=$2 text=$3 batch=$4
  shift 4
  local bopt=()
  [ -n "$batch" ] && bopt=(--batch-size "$batch")
  local L=$L_opus
  [ "$model" = "$bundled" ] && L=$L_bundled
  local n=$n_tput
  rm -f "$work/tput.time"
  if [ "$n" -gt 200 ]; then
    head -n 200 "$text" >"$work/tput.in"
    timed "$work/tput.time" "$cli" translate --model "$model" "$@" "${bopt[@]}" <"$work/tput.in" >/dev/null
    if awk -v t="$(col 1 "$work/tput.time")" -v L="$L" -v n="$n" 'BEGIN { exit !((t - L) * n / 200 > 600) }'; then
      n=200
    else
      rm -f "$work/tput.time"
    fi
  fi
  if [ ! -f "$work/tput.time" ]; then
    head -n "$n" "$text" >"$work/tput.in"
    timed "$work/tput.time" "$cli" translate --model "$model" "$@" "${bopt[@]}" <"$work/tput.in" >/dev/null
  fi
  local wall
  wall=$(col 1 "$work/tput.time")
  R[$name.n]=$n
  R[$name.wall]=$wall
  R[$name.rate]=$(awk -v w="$wall" -v L="$L" -v n="$n" 'BEGIN { print n / (w - L) }')
  R[$name.rss]=$(col 2 "$work/tput.time")
  log "throughput $name: $n sentences, $wall s"
}
if [ "$n_tput" -gt 0 ]; then
  throughput opus.b32 "$work/opus-base" "$work/test.en" "" "${opus_cap[@]}"
  throughput opus.b1 "$work/opus-base" "$work/test.en" 1 "${opus_cap[@]}"
  throughput bundled.b32 "$bundled" "$work/test.de" "" "${bundled_opts[@]}"
  throughput bundled.b1 "$bundled" "$work/test.de" 1 "${bundled_opts[@]}"
fi

# ------------------------------------------------------------------ (d) the window: translation -> every map drawn
if [ "$gui" = 1 ]; then
  "$work/bin/bench_ui" --model "$work/opus-base" --text "$(head -1 "$work/lat.en")" --repeat 3 >"$work/ui.opus" 2>/dev/null || true
  "$work/bin/bench_ui" --text "$(head -1 "$work/lat.de")" --repeat 3 >"$work/ui.bundled" 2>/dev/null || true
fi
uptime_after=$(uptime)

# ------------------------------------------------------------------ tables
echo "OPUS-MT base shapes from $opus_src: $params parameters; bundled $bundled: $bundled_params."
echo "Threads: $threads_note. Load before: ${uptime_before#*load average: }; after: ${uptime_after#*load average: }."
echo
echo "| model directory | on disk | process wall (inspect) | load inside (inspect's \"load time\") | peak resident memory (max RSS) |"
echo "| --- | ---: | ---: | ---: | ---: |"
label() {
  case $1 in
    opus-base) echo "OPUS base, model.safetensors F32 (tied matrix under 4 names, as the brief's make writes it)" ;;
    opus-once) echo "OPUS base, model.safetensors F32 (tied matrix once, as published ones, --tied-once)" ;;
    opus-bin) echo "OPUS base, pytorch_model.bin" ;;
    opus-pkg) echo "OPUS base, imported AttnLab package" ;;
    bundled) echo "bundled $bundled (7.6 M parameters)" ;;
  esac
}
for d in "${dirs[@]}" bundled; do
  size=—
  [ "$d" != bundled ] && size="$(size_mib "$work/$d") MiB"
  [ "$d" = bundled ] && size="$(size_mib "resources/models/$bundled") MiB"
  echo "| $(label "$d") | $size | $(fmt "$(col 1 "$work/inspect.$d.time" | median)") s" \
    "| $(fmt "$(median <"$work/inspect.$d.load")") s | $(($(col 2 "$work/inspect.$d.time" | median | cut -d. -f1) / 1024)) MiB |"
done
if [ $has_import = 1 ]; then
  echo "| \`attnlab-cli import\` of the safetensors directory (once) | | $(fmt "$(col 1 "$work/import.time")") s | | $(($(col 2 "$work/import.time") / 1024)) MiB |"
fi
echo "| \`translate\` with empty input (start, load, exit): OPUS base safetensors / bundled | | $(fmt "$L_opus") s / $(fmt "$L_bundled") s | | |"
echo
echo "| beam 4, one sentence | OPUS base (6+6, d 512, vocab 54,688) | bundled de→en (3+3, d 256, vocab 8,000) | ratio |"
echo "| --- | ---: | ---: | ---: |"
row() { echo "| $1 | $2 | $3 | $4 |"; }
row "sentences; median source / output pieces" "$n_lat; ${R[opus.src]} / ${R[opus.tok]} (capped at the source length)" \
  "$n_lat; ${R[bundled.src]} / ${R[bundled.tok]} (own eos)" ""
row "cold, \`--text S --attention\` (one process per sentence): the JSON's seconds (search + maps), median" \
  "$(fmt "${R[opus.att]}" 3) s" "$(fmt "${R[bundled.att]}" 3) s" "$(ratio "${R[opus.att]}" "${R[bundled.att]}")"
row "… per output piece, median" "$(fmt "${R[opus.att_ms_tok]}" 1) ms" "$(fmt "${R[bundled.att_ms_tok]}" 1) ms" \
  "$(ratio "${R[opus.att_ms_tok]}" "${R[bundled.att_ms_tok]}")"
row "warm (the $n_lat in one process, \`--batch-size 1 --attention\`): the JSON's seconds, median (first sentence)" \
  "$(fmt "${R[opus.warmatt]}" 3) s ($(fmt "${R[opus.warmatt_first]}" 3))" \
  "$(fmt "${R[bundled.warmatt]}" 3) s ($(fmt "${R[bundled.warmatt_first]}" 3))" "$(ratio "${R[opus.warmatt]}" "${R[bundled.warmatt]}")"
row "… per output piece, median" "$(fmt "${R[opus.warmatt_ms_tok]}" 1) ms" "$(fmt "${R[bundled.warmatt_ms_tok]}" 1) ms" \
  "$(ratio "${R[opus.warmatt_ms_tok]}" "${R[bundled.warmatt_ms_tok]}")"
row "warm, from process times (x4 − x1) / 3·$n_lat, mean per sentence: **with** \`--attention\` (maps computed and written)" \
  "$(fmt "${R[opus.diffatt]}" 3) s" "$(fmt "${R[bundled.diffatt]}" 3) s" "$(ratio "${R[opus.diffatt]}" "${R[bundled.diffatt]}")"
row "the same **without** \`--attention\`" "$(fmt "${R[opus.diffplain]}" 3) s" "$(fmt "${R[bundled.diffplain]}" 3) s" \
  "$(ratio "${R[opus.diffplain]}" "${R[bundled.diffplain]}")"
row "… per output piece, without / with" "$(fmt "${R[opus.diffplain_ms_tok]}" 1) / $(fmt "${R[opus.diffatt_ms_tok]}" 1) ms" \
  "$(fmt "${R[bundled.diffplain_ms_tok]}" 1) / $(fmt "${R[bundled.diffatt_ms_tok]}" 1) ms" \
  "$(ratio "${R[opus.diffplain_ms_tok]}" "${R[bundled.diffplain_ms_tok]}")"
if [ "$n_tput" -gt 0 ]; then
  for b in b32 b1; do
    what="batches of 32 (default)"
    [ $b = b1 ] && what="--batch-size 1"
    row "sentences/s, stdin, $what (load excluded); sentences; process wall; peak memory" \
      "**$(fmt "${R[opus.$b.rate]}" 2)**; ${R[opus.$b.n]}; $(fmt "${R[opus.$b.wall]}" 1) s; $((${R[opus.$b.rss]} / 1024)) MiB" \
      "**$(fmt "${R[bundled.$b.rate]}" 2)**; ${R[bundled.$b.n]}; $(fmt "${R[bundled.$b.wall]}" 1) s; $((${R[bundled.$b.rss]} / 1024)) MiB" \
      "1 / $(awk -v a="${R[opus.$b.rate]}" -v b="${R[bundled.$b.rate]}" 'BEGIN { printf "%.1f", b / a }')"
  done
fi
if [ "$gui" = 1 ]; then
  echo
  echo "bench_ui --repeat 3 (offscreen window 1400 × 900, first latency sentence; OPUS model beam 4 from its config, uncapped):"
  for m in opus bundled; do
    echo "- $m:"
    sed 's/^/    /' "$work/ui.$m"
  done
fi
