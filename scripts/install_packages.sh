#!/usr/bin/env bash
# Installs the Debian 12 packages AttnLab needs (only those missing). Used by setup.sh, sanitize.sh
# and fuzz.sh.   scripts/install_packages.sh [extra package ...]
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libtorch-dev                      # LibTorch 1.13 (CPU)
  libopenblas0-pthread              # without an OpenBLAS, LibTorch falls back to the reference BLAS (~80x slower)
  libopenblas0-openmp               # preferred by AttnLab's executables (see CMakeLists.txt, docs/benchmarks.md)
  libxnnpack-dev libpthreadpool-dev # weights packed once for decoding (core/src/model/packed_linear.h)
  libdnnl-dev                       # oneDNN: the int8 / bfloat16 compute types (core/src/model/low_precision.h)
  libsentencepiece-dev              # tokenizer (loaded through libattnlab_spm.so)
  nlohmann-json3-dev libcli11-dev zlib1g-dev
  libarchive-dev                    # Argos Translate packages (.argosmodel zips): core/src/formats/argos/argos_package.cpp
  libcurl4-openssl-dev libssl-dev   # models by Hugging Face hub name: downloads, sha256 (core/src/hub)
  qt6-base-dev libqcustomplot-dev   # desktop app and Qt Test
  libgif-dev                        # animated GIF export of the Training tab
  libcld2-dev                       # the source language detected (core/src/util/language_detect.cpp)
  libbenchmark-dev                  # micro-benchmarks
  python3-torch                     # the Python reference cross-check (tests/tst_reference_python.cpp)
  python3-sentencepiece             # scripts/marian_reference.py: MarianTokenizer reference (MarianMT checks)
  sentencepiece                     # spm_encode, for scripts/bench_train.sh
  clang-format-14                   # scripts/check_format.sh (the style of .clang-format, pinned)
  xvfb xauth                        # tst_presenter_xvfb_*: presenter mode on a real X window
  netpbm                            # scripts/make_screenshots.sh: frames put side by side
  slurm-wlm munge                   # tst_slurm: a single-node Slurm cluster of its own (scripts/local_slurm.sh)
  "$@"
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

