#!/usr/bin/env bash
# M2M100, NLLB-200 and mBART-50 at their real shapes in AttnLab (issue 41): load time and peak memory
# against the weights' size (with and without packed weights), one sentence's latency, greedy agreement
# with the independent Python reference at the same shape, and the import into a package.
#   scripts/bench_multilingual.sh HF_MULTILINGUAL_DIR [WORK]
#     HF_MULTILINGUAL_DIR  the real models' JSON files, e.g. ../shared/data/hf-multilingual:
#               nllb-200-distilled-600M/, m2m100_418M/, mbart-large-50-many-to-many-mmt/ (config.json,
#               generation_config.json, the tokenizer's JSON files); read in place, never copied here
#     WORK      where the models and outputs go (default: a temporary directory, removed at the end)
#   Environment:
#     FAMILIES="nllb m2m100 mbart50"  which models, in this order
#     LOAD_RUNS=3  runs of each `inspect` (medians are reported)
#     WARM_REPEAT=3  sentences in the warm run of (b)
#     REF_MAX_LENGTH=17  the reference's --max-length (counts the decoder start token); AttnLab gets
#                 --max-len REF_MAX_LENGTH-1 (its cap counts the forced language token, not the start)
#     MBART_EOS_BIAS=0  make's --eos-bias for mBART-50 (final_logits_bias[</s>] raised by it)
#     THREADS=N   LibTorch/OpenBLAS threads for every AttnLab process (exported as OMP_NUM_THREADS);
#                 unset: attnlab-cli's own policy (one thread for one sentence). The Python reference
#                 always runs on one thread (float64).
#     KEEP=0      1 keeps each model directory and package in WORK; 0 removes them once measured
#                 (2.3-2.5 GiB each)
#     BIN=build/bin  where attnlab-cli, libattnlab_spm.so, attnlab-spm-check are; they are copied into
#                 WORK first, so a rebuild during the run cannot swap them
#
# The models: scripts/hf_multilingual_reference.py make --family F --from REALDIR --d-model 1024
# --layers 12 --heads 16 --ffn 4096 --vocab-size V --seed 1 (model.safetensors, F32, random weights),
# with the real configuration (relu; the real vocab_size V: 256,206 NLLB-200, 128,112 M2M100, 250,054
# mBART-50, so the embedding and output projection have their real size), the real language lists and
# id layouts, but a SentencePiece model of 250 pieces trained by make: ids past the tokenizer's few
# hundred have no token (AttnLab shows them as <unused N> and leaves them out of the text; so does the
# reference). Random weights translate nothing; what is measured is the cost of the shape.
#
# Per family:
#  a. load only: `attnlab-cli inspect -m DIR` (its "load time" line: the engine's own load; the process
#     also starts LibTorch), with and without --no-packed-weights, LOAD_RUNS times each; the peak
#     resident memory (/usr/bin/time's max RSS) over the size of model.safetensors.
#  b. one sentence, greedy: `attnlab-cli translate -m DIR --src-lang S --tgt-lang T --beam 1 --max-len 16
#     --max-len-ratio 0 --text "The children are playing in the garden." --attention OUT.json`: the
#     sentence's "seconds" in the JSON (search + the teacher-forced pass for the maps), the whole
#     process's elapsed time and max RSS; with and without --no-packed-weights (packed copies of the
#     weights are made on the first translation, so only a translation shows their memory).
#     Then warm: the same sentence WARM_REPEAT times in one process (repeated --text, --batch-size 1),
#     each one's "seconds", with and without packed weights: the first one pays for the packing.
#  c. agreement: `hf_multilingual_reference.py run --max-length 17` (float64) on the same sentence and
#     directory: target_ids equal? the largest |difference| of every attention map (AttnLab's
#     sentences[0].attention.{encoder_self,decoder_self,cross} against the reference's
#     attentions.{encoder,decoder,cross}, [layer][head][q][k]) and of the log-probabilities (AttnLab's
#     token_log_probs against step_log_probs). mBART-50's generation_config has forced_eos_token_id: at
#     max_length the reference forces </s> (stop_reason forced_eos), which AttnLab does not; that last
#     id and its log-probability are left out of the comparison (its map rows are kept: the decoder's
#     inputs up to it are the same).
#  d. `attnlab-cli import --from DIR -o PKG`: time and max RSS; the package's size; `inspect` of it
#     (LOAD_RUNS times: load time and max RSS).
# Prints markdown tables; no timing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/bench_multilingual.sh HF_MULTILINGUAL_DIR [WORK]"
real_root=$(realpath "${1:?$usage}")
if [ -n "${2:-}" ]; then
  work=$(mkdir -p "$2" && realpath "$2")
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
bin=${BIN:-build/bin}
families=${FAMILIES:-"nllb m2m100 mbart50"}
load_runs=${LOAD_RUNS:-3}
warm_repeat=${WARM_REPEAT:-3}
ref_max_length=${REF_MAX_LENGTH:-17}
max_len=$((ref_max_length - 1))
mbart_eos_bias=${MBART_EOS_BIAS:-0}
keep=${KEEP:-0}
if [ -n "${THREADS:-}" ]; then export OMP_NUM_THREADS=$THREADS; fi
threads_note=${THREADS:-"attnlab-cli's default policy ($(nproc) cores)"}
py=/usr/bin/python3
sentence="The children are playing in the garden."

declare -A REALDIR=([nllb]=nllb-200-distilled-600M [m2m100]=m2m100_418M [mbart50]=mbart-large-50-many-to-many-mmt)
declare -A VOCAB=([nllb]=256206 [m2m100]=128112 [mbart50]=250054)
declare -A SRC=([nllb]=eng_Latn [m2m100]=en [mbart50]=en_XX)
declare -A TGT=([nllb]=deu_Latn [m2m100]=de [mbart50]=de_DE)
declare -A NAME=([nllb]="NLLB-200 (nllb-200-distilled-600M)" [m2m100]="M2M100 (m2m100_418M)"
  [mbart50]="mBART-50 (mbart-large-50-many-to-many-mmt)")

for fam in $families; do
  [ -n "${REALDIR[$fam]:-}" ] || { echo "unknown family $fam (nllb, m2m100, mbart50)" >&2; exit 2; }
  [ -f "$real_root/${REALDIR[$fam]}/config.json" ] || { echo "$real_root/${REALDIR[$fam]}/config.json is missing" >&2; exit 2; }
done
mkdir -p "$work/bin"
for f in attnlab-cli attnlab-cli.real attnlab-spm-check libattnlab_spm.so; do  # NAME.real: app/launcher
  [ -f "$bin/$f" ] || { echo "$bin/$f is missing" >&2; exit 2; }
  cp "$bin/$f" "$work/bin/"
done
cli=$work/bin/attnlab-cli
printf '%s\n' "$sentence" >"$work/sentence.txt"

log() { echo "[bench_multilingual $(date +%T)] $*" >&2; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fmt() { awk -v x="$1" -v d="${2:-2}" 'BEGIN { if (x == "nan" || x == "") print "—"; else printf "%.*f", d, x }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%\047.0f", k / 1024 }'; }          # kB -> MiB
ratio() { awk -v kb="$1" -v bytes="$2" 'BEGIN { printf "%.2f×", kb * 1024 / bytes }'; }  # RSS kB / file bytes
# timed OUT CMD...: runs CMD under /usr/bin/time -v, appends "elapsed_s maxrss_kB" to OUT
timed() {
  local out=$1
  shift
  /usr/bin/time -v -o "$work/time.tmp" "$@"
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i] }
              /Maximum resident set size/ { m = $2 } END { print s, m }' "$work/time.tmp" >>"$out"
}
col() { awk -v c="$1" '{ print $c }' "$2"; }
load_time() { awk '$1 == "load" && $2 == "time" { print $3 }' "$1"; }

uptime_before=$(uptime)
log "work: $work; threads: $threads_note; $uptime_before"
declare -A R

for fam in $families; do
  dir=$work/$fam
  pkg=$work/$fam-pkg
  src=${SRC[$fam]}
  tgt=${TGT[$fam]}
  # ---------------------------------------------------------------- the model
  extra=()
  [ "$fam" = mbart50 ] && extra=(--eos-bias "$mbart_eos_bias")
  rm -rf "$dir" "$pkg"
  rm -f "$work/$fam".*
  timed "$work/$fam.make.time" $py scripts/hf_multilingual_reference.py make --family "$fam" \
    --from "$real_root/${REALDIR[$fam]}" --out "$dir" --d-model 1024 --layers 12 --heads 16 --ffn 4096 \
    --vocab-size "${VOCAB[$fam]}" --seed 1 --format safetensors --dtype F32 "${extra[@]}" >"$work/$fam.make.out"
  log "$(cat "$work/$fam.make.out")"
  R[$fam.bytes]=$(stat -c %s "$dir/model.safetensors")

  # ---------------------------------------------------------------- (a) load only
  for mode in packed plain; do
    opt=()
    [ $mode = plain ] && opt=(--no-packed-weights)
    for _ in $(seq "$load_runs"); do
      timed "$work/$fam.load.$mode.time" "$cli" inspect -m "$dir" "${opt[@]}" >"$work/inspect.out"
      load_time "$work/inspect.out" >>"$work/$fam.load.$mode.inside"
      R[$fam.params]=$(awk '$1 == "total" { print $2 }' "$work/inspect.out")
    done
    R[$fam.load.$mode.wall]=$(col 1 "$work/$fam.load.$mode.time" | median)
    R[$fam.load.$mode.rss]=$(col 2 "$work/$fam.load.$mode.time" | median)
    R[$fam.load.$mode.inside]=$(median <"$work/$fam.load.$mode.inside")
    log "$fam inspect $mode: $(tr '\n' ' ' <"$work/$fam.load.$mode.time")"
  done

  # ---------------------------------------------------------------- (b) one sentence
  for mode in packed plain; do
    opt=()
    [ $mode = plain ] && opt=(--no-packed-weights)
    timed "$work/$fam.tr.$mode.time" "$cli" translate -m "$dir" --src-lang "$src" --tgt-lang "$tgt" --beam 1 \
      --max-len "$max_len" --max-len-ratio 0 --text "$sentence" --attention "$work/$fam.$mode.json" "${opt[@]}" \
      </dev/null >"$work/$fam.tr.$mode.out"
    R[$fam.tr.$mode.wall]=$(col 1 "$work/$fam.tr.$mode.time")
    R[$fam.tr.$mode.rss]=$(col 2 "$work/$fam.tr.$mode.time")
    R[$fam.tr.$mode.seconds]=$($py -c 'import json, sys; print(json.load(open(sys.argv[1]))["sentences"][0]["seconds"])' \
      "$work/$fam.$mode.json")
    log "$fam translate $mode: $(cat "$work/$fam.tr.$mode.time"), sentence ${R[$fam.tr.$mode.seconds]} s"
  done

  texts=()
  for _ in $(seq "$warm_repeat"); do texts+=(--text "$sentence"); done
  for mode in packed plain; do
    opt=()
    [ $mode = plain ] && opt=(--no-packed-weights)
    timed "$work/$fam.warm.$mode.time" "$cli" translate -m "$dir" --src-lang "$src" --tgt-lang "$tgt" --beam 1 \
      --max-len "$max_len" --max-len-ratio 0 --batch-size 1 "${texts[@]}" --attention "$work/$fam.warm.$mode.json" \
      "${opt[@]}" </dev/null >/dev/null
    R[$fam.warm.$mode]=$($py -c 'import json, sys; print(" / ".join("%.2f" % s["seconds"] for s in json.load(open(sys.argv[1]))["sentences"]))' \
      "$work/$fam.warm.$mode.json")
    R[$fam.warm.$mode.rss]=$(col 2 "$work/$fam.warm.$mode.time")
    log "$fam warm $mode: ${R[$fam.warm.$mode]} s; $(cat "$work/$fam.warm.$mode.time")"
  done

  # ---------------------------------------------------------------- (c) agreement with the Python reference
  timed "$work/$fam.ref.time" $py scripts/hf_multilingual_reference.py run --model "$dir" --sentences "$work/sentence.txt" \
    --src-lang "$src" --tgt-lang "$tgt" --out "$work/$fam.ref.json" --max-length "$ref_max_length" >"$work/$fam.ref.out"
  log "$fam reference: $(cat "$work/$fam.ref.time"); $(cat "$work/$fam.ref.out")"
  $py - "$work/$fam.packed.json" "$work/$fam.plain.json" "$work/$fam.ref.json" >"$work/$fam.agree" <<'EOF'
import json, sys
import numpy as np
a = json.load(open(sys.argv[1]))["sentences"][0]
p = json.load(open(sys.argv[2]))["sentences"][0]
ref = json.load(open(sys.argv[3]))
r, start = ref["sentences"][0], ref["config_used"]["decoder_start_token_id"]
ta, tr = a["target_ids"], r["target_ids"]
forced = r["stop_reason"] == "forced_eos"
tr_cmp = tr[:-1] if forced else tr  # the forced </s> is not AttnLab's to produce
n = min(len(ta), len(tr_cmp))
same_prefix = ta[:n] == tr_cmp[:n]
equal = ta == tr_cmp if not forced else (same_prefix and len(ta) >= len(tr_cmp))
# map rows: decoder inputs [start] + ids[:-1]; rows compared while both sides' inputs agree
din_a, din_r = [start] + ta[:-1], r["decoder_input_ids"]
rows = 0
while rows < min(len(din_a), len(din_r)) and din_a[rows] == din_r[rows]:
    rows += 1
def diff(x, y):
    return float(np.abs(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)).max())
att, ra = a["attention"], r["attentions"]
d_enc = diff(att["encoder_self"], ra["encoder"])
d_dec = diff(np.asarray(att["decoder_self"])[:, :, :rows, :rows], np.asarray(ra["decoder"])[:, :, :rows, :rows])
d_cross = diff(np.asarray(att["cross"])[:, :, :rows], np.asarray(ra["cross"])[:, :, :rows])
k = 0
while k < n and ta[k] == tr_cmp[k]:
    k += 1
lp = [abs(x - y) for x, y in zip(a["token_log_probs"][:k], r["step_log_probs"][:k])]
worst = int(np.argmax(lp)) if lp else -1
distinct = len(set(ta[1:]))
print(f"equal={'yes' if equal else 'no'}")
print(f"stop_reason={r['stop_reason']}")
print(f"n_attnlab={len(ta)}")
print(f"n_ref={len(tr)}")
print(f"compared={k}")
print(f"rows={rows}")
print(f"enc={d_enc:.2e}")
print(f"dec={d_dec:.2e}")
print(f"cross={d_cross:.2e}")
print(f"maps={max(d_enc, d_dec, d_cross):.2e}")
print(f"lp={max(lp):.2e}" if lp else "lp=—")
print(f"lp_at={worst}")
print(f"lp_value={a['token_log_probs'][worst]:.3f}" if lp else "lp_value=—")
print(f"lp_rest={max([0.0] + [x for i, x in enumerate(lp) if i != 0]):.2e}")
print(f"distinct={distinct}")
print(f"finished={'yes' if a['finished'] else 'no'}")
print(f"plain_same={'yes' if p['target_ids'] == ta else 'no'}")
print(f"plain_lp={max(abs(x - y) for x, y in zip(p['token_log_probs'], a['token_log_probs'])):.1e}" if p['target_ids'] == ta else "plain_lp=—")
print("ids_attnlab=" + " ".join(map(str, ta)))
print("ids_ref=" + " ".join(map(str, tr)))
EOF
  while IFS='=' read -r key val; do R[$fam.c.$key]=$val; done <"$work/$fam.agree"
  log "$fam agreement: $(tr '\n' ' ' <"$work/$fam.agree")"
  R[$fam.ref.wall]=$(col 1 "$work/$fam.ref.time")
  R[$fam.ref.rss]=$(col 2 "$work/$fam.ref.time")

  # ---------------------------------------------------------------- (d) import, and the package's load
  timed "$work/$fam.import.time" "$cli" import --from "$dir" -o "$pkg" >"$work/$fam.import.out"
  R[$fam.import.wall]=$(col 1 "$work/$fam.import.time")
  R[$fam.import.rss]=$(col 2 "$work/$fam.import.time")
  R[$fam.pkg.bytes]=$(stat -c %s "$pkg/model.safetensors")
  for _ in $(seq "$load_runs"); do
    timed "$work/$fam.pkgload.time" "$cli" inspect -m "$pkg" >"$work/inspect.out"
    load_time "$work/inspect.out" >>"$work/$fam.pkgload.inside"
  done
  R[$fam.pkgload.wall]=$(col 1 "$work/$fam.pkgload.time" | median)
  R[$fam.pkgload.rss]=$(col 2 "$work/$fam.pkgload.time" | median)
  R[$fam.pkgload.inside]=$(median <"$work/$fam.pkgload.inside")
  log "$fam import: $(cat "$work/$fam.import.time"); package inspect: $(tr '\n' ' ' <"$work/$fam.pkgload.time")"
  if [ "$keep" != 1 ]; then rm -rf "$dir" "$pkg"; fi
done
uptime_after=$(uptime)

# ------------------------------------------------------------------ tables
echo "Real shapes (d_model 1024, 12+12 layers, 16 heads, FFN 4096, relu, the real vocab_size), random weights"
echo "(seed 1), model.safetensors F32. Threads: $threads_note. $(nproc) cores."
echo "Load before: ${uptime_before#*load average: }; after: ${uptime_after#*load average: }."
echo
echo "Loading (\`attnlab-cli inspect -m DIR\`, medians of $load_runs; ratio = peak RSS / model.safetensors):"
echo
echo "| model | parameters | model.safetensors | weights | process | load inside | peak RSS | ratio |"
echo "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
for fam in $families; do
  for mode in packed plain; do
    what="packed (default)"
    [ $mode = plain ] && what="\`--no-packed-weights\`"
    echo "| ${NAME[$fam]} | ${R[$fam.params]} | $(awk -v b="${R[$fam.bytes]}" 'BEGIN { printf "%\047.0f MiB", b / 1048576 }') | $what" \
      "| $(fmt "${R[$fam.load.$mode.wall]}") s | $(fmt "${R[$fam.load.$mode.inside]}") s | $(mib "${R[$fam.load.$mode.rss]}") MiB" \
      "| $(ratio "${R[$fam.load.$mode.rss]}" "${R[$fam.bytes]}") |"
  done
done
echo
echo "One sentence (\`translate --beam 1 --max-len $max_len --max-len-ratio 0 --text \"$sentence\" --attention\`, one run):"
echo
echo "| model | weights | output ids (distinct after the language token) | sentence (JSON seconds) | process | peak RSS | ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for fam in $families; do
  for mode in packed plain; do
    what="packed (default)"
    [ $mode = plain ] && what="\`--no-packed-weights\` (same ids: ${R[$fam.c.plain_same]}, max Δ log-prob ${R[$fam.c.plain_lp]})"
    echo "| ${NAME[$fam]} | $what | ${R[$fam.c.n_attnlab]} (${R[$fam.c.distinct]}) | $(fmt "${R[$fam.tr.$mode.seconds]}") s" \
      "| $(fmt "${R[$fam.tr.$mode.wall]}") s | $(mib "${R[$fam.tr.$mode.rss]}") MiB | $(ratio "${R[$fam.tr.$mode.rss]}" "${R[$fam.bytes]}") |"
  done
done
echo
echo "The sentence $warm_repeat times in one process (\`--batch-size 1\`, repeated \`--text\`): each one's JSON seconds; peak RSS:"
echo
echo "| model | packed (default) | \`--no-packed-weights\` |"
echo "| --- | ---: | ---: |"
for fam in $families; do
  echo "| ${NAME[$fam]} | ${R[$fam.warm.packed]} s; $(mib "${R[$fam.warm.packed.rss]}") MiB | ${R[$fam.warm.plain]} s; $(mib "${R[$fam.warm.plain.rss]}") MiB |"
done
echo
echo "Agreement with \`hf_multilingual_reference.py run --max-length $ref_max_length\` (float64, one thread):"
echo
echo "| model | target_ids equal | reference stop | ids compared | max Δ attention (enc / dec / cross) | max Δ log-prob (step; its log-prob) | max Δ log-prob, steps ≥ 1 | reference: time, peak RSS |"
echo "| --- | --- | --- | ---: | --- | --- | ---: | ---: |"
for fam in $families; do
  note=""
  [ "${R[$fam.c.stop_reason]}" = forced_eos ] && note=" (forced </s> left out)"
  echo "| ${NAME[$fam]} | **${R[$fam.c.equal]}** | ${R[$fam.c.stop_reason]}$note | ${R[$fam.c.compared]} of ${R[$fam.c.n_attnlab]}" \
    "| ${R[$fam.c.enc]} / ${R[$fam.c.dec]} / ${R[$fam.c.cross]} | ${R[$fam.c.lp]} (${R[$fam.c.lp_at]}; ${R[$fam.c.lp_value]})" \
    "| ${R[$fam.c.lp_rest]} | $(fmt "${R[$fam.ref.wall]}" 1) s, $(mib "${R[$fam.ref.rss]}") MiB |"
done
echo
echo "Import (\`attnlab-cli import --from DIR -o PKG\`) and the package's load (\`inspect -m PKG\`, medians of $load_runs):"
echo
echo "| model | import: time | import: peak RSS | package model.safetensors | package: process | load inside | peak RSS | ratio |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for fam in $families; do
  echo "| ${NAME[$fam]} | $(fmt "${R[$fam.import.wall]}") s | $(mib "${R[$fam.import.rss]}") MiB" \
    "| $(awk -v b="${R[$fam.pkg.bytes]}" 'BEGIN { printf "%\047.0f MiB", b / 1048576 }') | $(fmt "${R[$fam.pkgload.wall]}") s" \
    "| $(fmt "${R[$fam.pkgload.inside]}") s | $(mib "${R[$fam.pkgload.rss]}") MiB | $(ratio "${R[$fam.pkgload.rss]}" "${R[$fam.pkg.bytes]}") |"
done
echo
for fam in $families; do
  echo "- ${NAME[$fam]}: make (Python, tensor by tensor) $(fmt "$(col 1 "$work/$fam.make.time")" 1) s, peak" \
    "$(mib "$(col 2 "$work/$fam.make.time")") MiB; AttnLab ids ${R[$fam.c.ids_attnlab]}; reference ${R[$fam.c.ids_ref]}"
done
