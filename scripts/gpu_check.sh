#!/usr/bin/env bash
# AttnLab on an NVIDIA GPU (issue 29): the core, the CLI and their tests built against the CUDA
# LibTorch 2.x inside a machine's PyTorch (pip's torch carries LibTorch's CMake package), the
# suite with its translators on the GPU, the GPU's translations against the CPU's, and benchmarks
# of the GPU beside the CPU of the same machine. Its report is docs/gpu.md.
#
#   scripts/gpu_check.sh fetch [DATA]   here, on Debian 12: the Debian packages the GPU machine lacks
#                                       (.debs) and the data, into .gpu/ (git-ignored); DATA defaults
#                                       to ../shared/data
#   scripts/gpu_check.sh build          on the GPU machine: unpacks .gpu/debs into build-gpu/sysroot
#                                       (never into /), configures and builds build-gpu/ (no GUI)
#   scripts/gpu_check.sh agree          GPU against CPU: test_2016_flickr (1,000 sentences, beam 5)
#                                       with the bundled de->en model on both; fails when BLEU differs
#                                       by more than 0.1 or more than 2 % of the translations differ
#   scripts/gpu_check.sh test           the core and CLI tests with ATTNLAB_TEST_DEVICE=cuda
#   scripts/gpu_check.sh bench          one sentence, 1,000 sentences, an OPUS-MT base-size model,
#                                       training tokens/s: the GPU beside the CPU
#   scripts/gpu_check.sh all            build, agree, test, bench within GPU_CHECK_BUDGET seconds
#   scripts/gpu_check.sh debug TEST [F] a test program (or one function) under gdb/cuda-gdb: the crash's backtrace
#   scripts/gpu_check.sh train-bundled PAIR   a bundled model's recipe (de-en or en-de) trained on the GPU
#   scripts/gpu_check.sh report DIR     here: docs/gpu.md from the parts the steps wrote into DIR
#
# Each GPU step writes its part of the report (STEP.md) and its log (STEP.log) into $GPU_CHECK_OUT
# (default build-gpu/report). The machine needs python3 with a CUDA torch 2.x, a C++17 compiler,
# CMake >= 3.25 and ninja or make; the bundled de->en model must be in resources/models (the
# en->de model is not needed, except by the tests that name it).
# Environment: PYTHON (default python3), JOBS (parallel tests, default 8), GPU_BUILD_DIR (default
# build-gpu), GPU_DEVICE (default cuda: agree and bench with cpu against build/ try the script on a
# machine without a GPU).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
root=$PWD
step=${1:?usage: scripts/gpu_check.sh fetch|build|agree|test|bench|all|debug|train-bundled|report}
shift

debs=(
  # Qt Core and Qt Test for the Qt Test programs (the GUI is off), with what libQt6Core needs
  libqt6core6 libqt6test6 qt6-base-dev qt6-base-dev-tools qmake6 qmake6-bin
  libicu72 libdouble-conversion3 libb2-1 libpcre2-16-0 libpcre2-8-0 libzstd1
  libglib2.0-0 libffi8 libmount1 libblkid1 libselinux1
  # the tokenizer, JSON, the CLI's parser, zlib, pkg-config
  libsentencepiece0 libsentencepiece-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  pkgconf pkgconf-bin libpkgconf3
)
gpu_dir=$root/.gpu
build=$(realpath -m "${GPU_BUILD_DIR:-$root/build-gpu}")
sysroot=$build/sysroot
gpu=${GPU_DEVICE:-cuda}
out=${GPU_CHECK_OUT:-$build/report}
py=${PYTHON:-python3}
model=$root/resources/models/multi30k-de-en
cli=$build/bin/attnlab-cli
# build and test logs go beside the report; agree's and bench's (long, rarely read) into build-gpu/logs
steplog=$out/$step.log
case $step in agree | bench) steplog=$build/logs/$step.log ;; esac

log() { echo "gpu_check: $*" >&2; }
now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
# seconds a command takes, its output thrown away (stderr to the step's log): T=$(timed cmd ...)
timed() {
  local t0
  t0=$(now)
  "$@" >/dev/null 2>>"$steplog" || return 1
  calc "$(now) - $t0"
}
# a number with N decimals; anything else (a failed measurement) as it is
first() { awk 'NR == 1'; }  # the first line, reading all (no SIGPIPE under pipefail)
fmt() {
  if [[ $1 =~ ^-?[0-9.]+(e[-+]?[0-9]+)?$ ]]; then printf "%.${2:-3}f" "$1"; else printf "%s" "$1"; fi
}

fetch() {
  local data=${1:-../shared/data}
  mkdir -p "$gpu_dir/debs" "$gpu_dir/data/multi30k" "$gpu_dir/data/opus-mt-en-mg"
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
  (cd "$gpu_dir/debs" && apt-get download "${debs[@]}")
  for f in train val test_2016_flickr; do
    for l in de en; do cp "$data/multi30k/$f.$l.gz" "$gpu_dir/data/multi30k/"; done
  done
  for f in config.json source.spm target.spm vocab.json; do cp "$data/opus-mt-en-mg/$f" "$gpu_dir/data/opus-mt-en-mg/"; done
  du -sh "$gpu_dir"
}

# The .debs unpacked into the sysroot; a library the machine already has (by soname) is removed
# from it so that the machine's own, newer one is used; a development link left dangling by that
# points at the machine's library.
unpack() {
  [ -f "$sysroot/.unpacked" ] && return
  compgen -G "$gpu_dir/debs/*.deb" >/dev/null ||
    { log "no .debs in $gpu_dir/debs: run scripts/gpu_check.sh fetch on a Debian 12 machine first"; return 1; }
  rm -rf "$sysroot"
  mkdir -p "$sysroot"
  for d in "$gpu_dir"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$d" "$sysroot"
    else
      ar p "$d" data.tar.xz | tar -xJ -C "$sysroot"
    fi
  done
  local libdir=$sysroot/usr/lib/x86_64-linux-gnu have soname f l target
  have=$(ldconfig -p | awk 'NR > 1 { print $1 }' | sort -u)
  for f in "$libdir"/lib*.so.[0-9]*; do
    soname=$(basename "$f" | sed -E 's/(\.so\.[0-9]+).*/\1/')
    grep -qxF "$soname" <<<"$have" && rm -f "$f"
  done
  for l in "$libdir"/lib*.so; do
    [ -e "$l" ] && continue
    soname=$(basename "$(readlink "$l")" | sed -E 's/(\.so\.[0-9]+).*/\1/')
    target=$(ldconfig -p | awk -v s="$soname" '$1 == s && !f++ { print $NF }')
    [ -n "$target" ] && ln -sf "$target" "$l"
  done
  sed -i "s|^prefix=/usr\$|prefix=$sysroot/usr|" "$libdir"/pkgconfig/*.pc "$sysroot"/usr/share/pkgconfig/*.pc
  touch "$sysroot/.unpacked"
}

environment() {
  export LD_LIBRARY_PATH=$sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_PATH=$sysroot/usr/lib/x86_64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig
  if [ -d /usr/local/cuda/bin ]; then export PATH=$PATH:/usr/local/cuda/bin; fi
  export QT_QPA_PLATFORM=offscreen
}

describe() {
  {
    echo "## The machine"
    echo
    echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | first || true)"
    echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | first), $(nproc) cores"
    echo "- LibTorch: $($py -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -1)"
    echo "- compiler: $(c++ --version | first); $(cmake --version | first); nvcc: $(nvcc --version 2>/dev/null | tail -2 | first || echo none)"
    echo "- OS: $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo
  } >"$out/env.md"
  cat "$out/env.md" >&2
}

do_build() {
  mkdir -p "$out"
  describe
  unpack
  environment
  local torch_prefix gen=Ninja pkgconf=() rc=0 budget=${STEP_BUDGET:-86400}
  torch_prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)')
  command -v ninja >/dev/null || gen="Unix Makefiles"
  command -v pkg-config >/dev/null || pkgconf=(-DPKG_CONFIG_EXECUTABLE="$sysroot/usr/bin/pkgconf")
  local t0
  t0=$(now)
  {
    cmake -S . -B "$build" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DATTNLAB_BUILD_GUI=OFF \
      -DATTNLAB_BUILD_BENCHMARKS=OFF -DATTNLAB_USE_CCACHE=OFF -DATTNLAB_USE_XNNPACK=OFF \
      -DATTNLAB_PREFER_OPENMP_BLAS=OFF -DCMAKE_PREFIX_PATH="$torch_prefix;$sysroot/usr" "${pkgconf[@]}" &&
      if [ "$gen" = Ninja ]; then
        timeout "$budget" cmake --build "$build" --parallel "$(nproc)" -- -k 0
      else
        timeout "$budget" cmake --build "$build" --parallel "$(nproc)" -- -k
      fi
  } >"$out/build.log" 2>&1 || rc=$?
  local secs
  secs=$(calc "$(now) - $t0")
  {
    echo "## Build"
    echo
    echo "\`scripts/gpu_check.sh build\`: CMake against \`torch.utils.cmake_prefix_path\`, GUI, benchmarks and"
    echo "XNNPACK off (pip's LibTorch carries its own XNNPACK), $(nproc) jobs."
    echo
    echo "- $(grep -m1 'AttnLab: LibTorch' "$out/build.log" | sed 's/^-- //' || true)"
    if [ $rc = 0 ]; then
      echo "- built in $(fmt "$secs" 0) s: $(ls "$build/bin" | grep -c '^tst_') test programs and attnlab-cli"
    else
      echo "- **failed** (exit $rc) after $(fmt "$secs" 0) s; the first errors:"
      echo
      echo '```'
      grep -m40 -E 'error|Error|FAILED' "$out/build.log" || true
      echo '```'
    fi
    echo
  } >"$out/build.md"
  cat "$out/build.md" >&2
  return $rc
}

# 1,000 sentences of test_2016_flickr, beam 5, batches of 32, on the CPU and on the GPU.
do_agree() {
  mkdir -p "$out" "$build/logs"
  environment
  local d=$build/agree
  mkdir -p "$d"
  gunzip -c "$gpu_dir/data/multi30k/test_2016_flickr.de.gz" >"$d/src"
  gunzip -c "$gpu_dir/data/multi30k/test_2016_flickr.en.gz" >"$d/ref"
  local dev secs=()
  : >"$steplog"
  rm -f "$d"/hyp.* "$d"/eval.*
  for dev in cpu "$gpu"; do
    local t0
    t0=$(now)
    timeout "${STEP_BUDGET:-86400}" "$cli" eval --model "$model" --device "$dev" --src "$d/src" --ref "$d/ref" --beam 5 --batch-size 32 \
      --output "$d/hyp.$dev" >"$d/eval.$dev" 2>>"$steplog" || log "$dev: eval failed (build-gpu/logs/agree.log)"
    secs+=("$(calc "$(now) - $t0")")
    cat "$d/eval.$dev" >>"$steplog"
  done
  touch "$d/hyp.cpu" "$d/hyp.$gpu" "$d/eval.cpu" "$d/eval.$gpu"
  local auto
  auto=$("$cli" inspect --model "$model" 2>>"$steplog" | awk '$1 == "device" { print $2 }' || true)
  local n differ bleu_cpu bleu_gpu chrf_cpu chrf_gpu verdict=passed rc=0
  n=$(wc -l <"$d/src")
  differ=$(paste -d '\t' "$d/hyp.cpu" "$d/hyp.$gpu" | awk -F'\t' '$1 != $2' | wc -l)
  score() { awk -v k="$1" '$1 == k && $2 == "=" { print $3; exit }' "$2"; }  # "BLEU = 40.84 ..."
  bleu_cpu=$(score BLEU "$d/eval.cpu")
  bleu_gpu=$(score BLEU "$d/eval.$gpu")
  chrf_cpu=$(score chrF2 "$d/eval.cpu")
  chrf_gpu=$(score chrF2 "$d/eval.$gpu")
  if [ -z "$bleu_cpu" ] || [ -z "$bleu_gpu" ] ||
    [ "$(calc "($bleu_cpu - $bleu_gpu > 0.1 || $bleu_gpu - $bleu_cpu > 0.1) ? 1 : 0")" = 1 ] ||
    [ $((differ * 100)) -gt $((n * 2)) ]; then
    verdict="**failed**"
    rc=1
  fi
  {
    echo "## GPU against CPU"
    echo
    echo "\`scripts/gpu_check.sh agree\`: the bundled de->en model translates test_2016_flickr.de ($n"
    echo "sentences, beam 5, batches of 32) on the CPU and on the GPU of this machine. The check fails when"
    echo "BLEU differs by more than 0.1 or more than 2 % of the translations differ: $verdict."
    echo
    echo "| | CPU | GPU |"
    echo "| --- | ---: | ---: |"
    echo "| BLEU | ${bleu_cpu:-failed} | ${bleu_gpu:-failed} |"
    echo "| chrF | ${chrf_cpu:-failed} | ${chrf_gpu:-failed} |"
    echo "| seconds (the whole process) | $(fmt "${secs[0]}" 1) | $(fmt "${secs[1]}" 1) |"
    echo
    echo "Translations that differ: **$differ of $n**."
    echo
    echo "\`attnlab-cli inspect\` with no \`--device\` (that is, \`auto\`) put the model on: **${auto:-failed}**."
    if [ "$differ" -gt 0 ]; then
      echo
      echo "The first differing ones (line: CPU / GPU):"
      echo
      paste -d '\t' "$d/hyp.cpu" "$d/hyp.$gpu" | awk -F'\t' '$1 != $2 && n++ < 5 { printf "- %d: %s / %s\n", NR, $1, $2 }'
    fi
    if [ -z "$bleu_cpu" ] || [ -z "$bleu_gpu" ]; then
      echo
      echo '```'
      tail -20 "$steplog"
      echo '```'
    fi
    echo
  } >"$out/agree.md"
  cat "$out/agree.md" >&2
  return $rc
}

do_test() {
  mkdir -p "$out"
  environment
  local rc=0 t0 secs
  t0=$(now)
  ATTNLAB_TEST_DEVICE=$gpu ATTNLAB_PYTHON=$(command -v "$py") ATTNLAB_OPUS_MT_DIR=$gpu_dir/data/opus-mt-en-mg \
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} timeout "${STEP_BUDGET:-86400}" \
    ctest --test-dir "$build" -L 'core|cli' -j "${JOBS:-8}" --timeout "${TEST_TIMEOUT:-420}" --output-on-failure \
    >"$out/test.log" 2>&1 || rc=$?
  secs=$(calc "$(now) - $t0")
  {
    echo "## The core and CLI tests on the GPU"
    echo
    echo "\`scripts/gpu_check.sh test\`: \`ctest -L 'core|cli'\` with \`ATTNLAB_TEST_DEVICE=cuda\` (the tests'"
    echo "translators on the GPU; engines whose tensors a test reads stay on the CPU), ${JOBS:-8} at a time,"
    echo "$(fmt "$secs" 0) s."
    echo
    if [ $rc = 124 ]; then
      echo "- **stopped at its time budget** (${STEP_BUDGET:-} s); the tests that finished by then are below"
    else
      echo "- $(grep -E 'tests passed|tests failed' "$out/test.log" | tail -1 || true)"
    fi
    echo
    echo '```'
    grep -E '^ *[0-9]+/[0-9]+ Test +#' "$out/test.log" | sed -E 's/^ *[0-9]+\/[0-9]+ //; s/ +/ /g' || true
    echo '```'
    echo
  } >"$out/test.md"
  cat "$out/test.md" >&2
  return $rc
}

# Median-free, two-point latency: the same N sentences once and four times over at --batch-size 1,
# so that starting, loading and the GPU's first kernels cancel out: (t4 - t1) / 3N.
latency() {  # MODEL DEVICE SENTENCES [translate options]
  local m=$1 dev=$2 s=$3
  shift 3
  local x4=$build/bench/x4 t1 t4 n
  cat "$s" "$s" "$s" "$s" >"$x4"
  n=$(wc -l <"$s")
  t1=$(timed "$cli" translate --model "$m" --device "$dev" --batch-size 1 "$@" <"$s") || return 1
  t4=$(timed "$cli" translate --model "$m" --device "$dev" --batch-size 1 "$@" <"$x4") || return 1
  calc "($t4 - $t1) / (3 * $n) * 1000"
}

# Sentences a second over a file, the time of an empty run (start and load) taken off.
throughput() {  # MODEL DEVICE SENTENCES BATCH [translate options]
  local m=$1 dev=$2 s=$3 b=$4
  shift 4
  local t0 t n
  n=$(wc -l <"$s")
  t0=$(timed "$cli" translate --model "$m" --device "$dev" "$@" </dev/null) || return 1
  t=$(timed "$cli" translate --model "$m" --device "$dev" --batch-size "$b" "$@" <"$s") || return 1
  calc "$n / ($t - $t0)"
}

# Target tokens a second of 45 steps of 4,096 tokens (the mean of the windows after the first):
# the shape of scripts/bench_train.sh.
train_rate() {  # DEVICE
  local r=$build/bench/train-$1
  rm -rf "$r"
  "$cli" train --data "$build/bench/data" --src de --tgt en --output "$r" --tokenizer "$model/tokenizer.model" \
    --layers 3 --heads 8 --d-model 256 --d-inner 1024 --d-k 32 --d-v 32 --dropout 0.1 --share-proj true \
    --share-emb true --scale-emb-or-prj emb --batch-tokens 4096 --seed 1 --max-steps 45 --log-every 15 \
    --device "$1" >/dev/null 2>>"$steplog" || return 1
  awk -F'\t' 'NR > 2 { s += $6; n++ } END { printf "%.0f", s / n }' "$r/steps.tsv"
}

# The bench table from the figures measured so far ($build/bench/figures: "key value" lines), so
# that a run stopped part-way still reports what it measured.
bench_md() {
  declare -A r
  local k v
  while read -r k v; do r[$k]=$v; done <"$build/bench/figures"
  get() { echo "${r[$1]:-not measured}"; }
  ratio() { [[ ${r[$1]:-} =~ ^[0-9.]+$ && ${r[$2]:-} =~ ^[0-9.]+$ ]] && fmt "$(calc "${r[$1]} / ${r[$2]}")" 1 || echo "-"; }
  local gpu_name cpu
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | first || true)
  cpu="$(lscpu | sed -n 's/^Model name: *//p' | first), $(nproc) cores"
  {
    echo "## Benchmarks: the GPU beside the CPU of the same machine"
    echo
    echo "\`scripts/gpu_check.sh bench\` on ${gpu_name:-no GPU ($gpu)} and $cpu (at::linear on the CPU: this"
    echo "build has no XNNPACK). Whole \`attnlab-cli\` processes. Latency is the two-point difference of 12"
    echo "sentences once and four times over at \`--batch-size 1\` (start, load and the GPU's first kernels"
    echo "cancel out); throughput takes an empty run (start and load) off. Both run on the threads the CPU"
    echo "policy gives their steps (attnlab/device.h: one thread below 8 G multiply-adds a step in float32, then one per 400 M)."
    echo
    echo "| measurement | CPU | GPU | GPU speed-up |"
    echo "| --- | ---: | ---: | ---: |"
    echo "| bundled de->en, one sentence, beam 5 (ms) | $(fmt "$(get cpu.lat)" 1) | $(fmt "$(get gpu.lat)" 1) | $(ratio cpu.lat gpu.lat)x |"
    echo "| bundled de->en, 1,000 sentences, beam 5, batches of 32 (sentences/s) | $(fmt "$(get cpu.tput)" 0) | $(fmt "$(get gpu.tput)" 0) | $(ratio gpu.tput cpu.tput)x |"
    echo "| the same, batches of 128 on the GPU (sentences/s) | | $(fmt "$(get gpu.tput128)" 0) | |"
    echo "| OPUS-MT base size (6+6 layers, d_model 512, random weights), one sentence, beam 4 (ms) | $(fmt "$(get cpu.olat)" 1) | $(fmt "$(get gpu.olat)" 1) | $(ratio cpu.olat gpu.olat)x |"
    echo "| OPUS-MT base size, 200 sentences, beam 4, batches of 32 (sentences/s) | $(fmt "$(get cpu.otput)" 1) | $(fmt "$(get gpu.otput)" 1) | $(ratio gpu.otput cpu.otput)x |"
    echo "| training, 3 layers, d_model 256, 4,096-token batches (target tokens/s) | $(get cpu.train) | $(get gpu.train) | $(ratio gpu.train cpu.train)x |"
    echo
    echo "The OPUS model's outputs are capped at the source length (\`--max-len-ratio 1 --max-len-offset 0\`),"
    echo "as in scripts/bench_marian.sh: random weights never end a sentence by themselves. Training: the"
    echo "mean target tokens/s of steps.tsv's windows after the first (45 steps, as scripts/bench_train.sh)."
    echo
    if grep -q ' failed$' "$build/bench/figures"; then
      echo "A measurement failed; the end of build-gpu/logs/bench.log:"
      echo
      echo '```'
      tail -15 "$steplog"
      echo '```'
      echo
    fi
  } >"$out/bench.md"
}

# One figure: KEY FUNCTION ARGS... (a failure is recorded as "failed", the run goes on)
measure() {
  local key=$1 v
  shift
  if [ -n "${STEP_BUDGET:-}" ] && [ $SECONDS -ge "$STEP_BUDGET" ]; then
    echo "$key not measured (time budget)" >>"$build/bench/figures"
    return
  fi
  log "$key"
  v=$("$@") || v=failed
  echo "$key $v" >>"$build/bench/figures"
  bench_md
}

do_bench() {
  mkdir -p "$out" "$build/bench/data" "$build/logs"
  environment
  local b=$build/bench
  : >"$b/figures"
  gunzip -c "$gpu_dir/data/multi30k/test_2016_flickr.de.gz" >"$b/de1000"
  gunzip -c "$gpu_dir/data/multi30k/test_2016_flickr.en.gz" >"$b/en1000"
  head -12 "$b/de1000" >"$b/de12"
  head -12 "$b/en1000" >"$b/en12"
  head -200 "$b/en1000" >"$b/en200"
  for l in de en; do
    cp "$gpu_dir/data/multi30k/train.$l.gz" "$b/data/"
    gunzip -c "$gpu_dir/data/multi30k/val.$l.gz" | sed -n 1,50p >"$b/data/val.$l"
  done
  local cap=(--beam 4 --max-len-ratio 1 --max-len-offset 0)
  local pair k dev
  for pair in cpu:cpu "gpu:$gpu"; do
    k=${pair%%:*} dev=${pair#*:}
    measure $k.lat latency "$model" "$dev" "$b/de12" --beam 5
    measure $k.tput throughput "$model" "$dev" "$b/de1000" 32 --beam 5
  done
  measure gpu.tput128 throughput "$model" "$gpu" "$b/de1000" 128 --beam 5
  for pair in cpu:cpu "gpu:$gpu"; do
    k=${pair%%:*} dev=${pair#*:}
    measure $k.train train_rate "$dev"
  done
  log "OPUS-MT base-size model (random weights)"
  rm -rf "$b/opus-base"
  "$py" scripts/marian_reference.py make --from "$gpu_dir/data/opus-mt-en-mg" --out "$b/opus-base" --d-model 512 \
    --encoder-layers 6 --decoder-layers 6 --heads 8 --ffn 2048 --format safetensors --seed 3 --eos-bias 8 \
    --max-length 512 --tied-once >>"$steplog" 2>&1 || log "marian_reference.py make failed (build-gpu/logs/bench.log)"
  for pair in "gpu:$gpu" cpu:cpu; do
    k=${pair%%:*} dev=${pair#*:}
    measure $k.olat latency "$b/opus-base" "$dev" "$b/en12" "${cap[@]}"
    measure $k.otput throughput "$b/opus-base" "$dev" "$b/en200" 32 "${cap[@]}"
  done
  bench_md
  cat "$out/bench.md" >&2
}

# A bundled model's whole recipe (scripts/models/multi30k-PAIR.sh: base run, annealing, packaging,
# the attention history recorded) trained on the GPU; the package comes back as a tar in 15 MiB
# pieces (the device tool returns files of at most 16 MiB): here,
#   cat DIR/multi30k-PAIR.tar.part-* | tar -x -C resources/models
train_bundled() {
  local pair=${1:?usage: scripts/gpu_check.sh train-bundled de-en|en-de} rc=0 t0
  mkdir -p "$out" "$build/runs"
  environment
  t0=$(now)
  ATTNLAB_TRAIN_DEVICE=$gpu ATTNLAB_CLI=$cli ATTNLAB_RUNS=$build/runs timeout "${STEP_BUDGET:-86400}" \
    scripts/models/multi30k-"$pair".sh "$gpu_dir/data/multi30k" >"$out/train-$pair.log" 2>&1 || rc=$?
  log "train-bundled $pair: exit $rc after $(fmt "$(calc "$(now) - $t0")" 0) s"
  if [ $rc = 0 ]; then
    tar -C resources/models -cf "$build/multi30k-$pair.tar" "multi30k-$pair"
    split -b 15M -d "$build/multi30k-$pair.tar" "$out/multi30k-$pair.tar.part-"
    ls -la "$out" >&2
  fi
  tail -5 "$out/train-$pair.log" >&2
  return $rc
}

# A test program under gdb (or cuda-gdb, which the GPU image has instead) in batch mode: where a
# crash happens, with its backtrace. debug TEST [TEST FUNCTION ...]
do_debug() {
  local t=${1:?usage: scripts/gpu_check.sh debug TEST [FUNCTION ...]} dbg
  shift
  mkdir -p "$out"
  environment
  {
    echo "== the link command"
    (cd "$build" && ninja -t commands "bin/$t" 2>/dev/null | tail -1) || true
    echo "== libstdc++ objects the program defines itself (std::cerr seen there: docs/gpu.md)"
    readelf -W --dyn-syms "$build/bin/$t" | awk '$7 != "UND" && $8 ~ /^_ZSt/ && n++ < 20'
    echo "== copy relocations"
    readelf -rW "$build/bin/$t" | grep -c R_X86_64_COPY || true
    echo "== std::filesystem functions LibTorch exports itself (pytorch/pytorch#133437; util::removeTree)"
    nm -D --defined-only "$($py -c 'import os, torch; print(os.path.dirname(torch.__file__))')/lib/libtorch_cpu.so" |
      grep -c 'filesystem.*recursive_directory_iterator' || true
  } 2>&1 | tee "$out/link-$t.log"
  dbg=$(command -v gdb || command -v cuda-gdb || true)
  [ -n "$dbg" ] || { log "neither gdb nor cuda-gdb is installed"; return 1; }
  ATTNLAB_TEST_DEVICE=$gpu ATTNLAB_PYTHON=$(command -v "$py") ATTNLAB_OPUS_MT_DIR=$gpu_dir/data/opus-mt-en-mg \
    QTEST_DISABLE_STACK_DUMP=1 timeout "${STEP_BUDGET:-600}" "$dbg" -batch -ex run -ex "thread apply all bt 30" \
    --args "$build/bin/$t" "$@" 2>&1 | tee "$out/debug-$t.log" | tail -80
}

# Every GPU step in the order that matters most, each given what is left of BUDGET seconds
# (default 3600): build, agree, test (at most a third of what is left), bench.
do_all() {
  local budget=${GPU_CHECK_BUDGET:-3600} start=$SECONDS rc=0
  left() { echo $((budget - (SECONDS - start))); }
  STEP_BUDGET=$(left) "$self" build || rc=$?
  [ -x "$cli" ] || return $rc
  [ "$(left)" -gt 60 ] && { STEP_BUDGET=$(left) "$self" agree || rc=$?; }
  [ "$(left)" -gt 60 ] && { STEP_BUDGET=$(($(left) / 3)) "$self" test || rc=$?; }
  [ "$(left)" -gt 30 ] && { STEP_BUDGET=$(left) "$self" bench || rc=$?; }
  return $rc
}

# The line in docs/gpu.md below which the notes written by hand are kept by a new report.
notes_marker='<!-- Notes below this line are written by hand; scripts/gpu_check.sh report keeps them. -->'

do_report() {
  local dir=${1:?usage: scripts/gpu_check.sh report DIR} notes=""
  if [ -f docs/gpu.md ] && grep -qxF "$notes_marker" docs/gpu.md; then
    notes=$(sed -n "/^<!-- Notes below this line/,\$p" docs/gpu.md)
  fi
  {
    echo "# AttnLab on a GPU"
    echo
    echo "Made by \`scripts/gpu_check.sh\` (issue 29) on a machine with an NVIDIA GPU and PyTorch 2.x with"
    echo "CUDA: the core, the CLI and their tests built against that PyTorch's LibTorch, the tests run with"
    echo "their translators on the GPU, the GPU's translations compared with the CPU's, and the GPU"
    echo "measured beside the CPU of the same machine. How to run it: the script's header; how to build"
    echo "against a CUDA LibTorch yourself: the README, \"Building against a CUDA LibTorch\". CI has no GPU"
    echo "and runs none of this."
    echo
    for part in env build agree test bench; do
      if [ -f "$dir/$part.md" ]; then cat "$dir/$part.md"; fi
    done
    if [ -n "$notes" ]; then echo "$notes"; else echo "$notes_marker"; fi
  } >docs/gpu.md.new
  mv docs/gpu.md.new docs/gpu.md
  log "wrote docs/gpu.md"
}

case $step in
fetch) fetch "$@" ;;
build) do_build ;;
agree) do_agree ;;
test) do_test ;;
bench) do_bench ;;
all) do_all ;;
debug) do_debug "$@" ;;
train-bundled) train_bundled "$@" ;;
report) do_report "$@" ;;
*)
  echo "usage: scripts/gpu_check.sh fetch|build|agree|test|bench|all|debug|train-bundled|report" >&2
  exit 2
  ;;
esac
