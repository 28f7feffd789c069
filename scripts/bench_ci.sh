#!/usr/bin/env bash
# Where CI's time goes (issue 53, item 4), measured in CPU seconds (user + system: steadier than the wall on a
# shared machine) on a built tree (build/): a Python that imports the reference scripts' modules, the torch PCH
# loaded into an empty file, model/*.cpp compiled one by one against the same files as one unit (what
# ATTNLAB_UNITY_BUILD does under CI), and the test programs that run the reference scripts. docs/reliability.md
# "CI time" has the figures.
#   scripts/bench_ci.sh [TEST...]     (default: the tests that run scripts/*_reference.py)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || { echo "bench_ci.sh: build/compile_commands.json missing: run scripts/setup.sh" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "python3 importing torch, numpy, sentencepiece: %U + %S s CPU, %e s wall" \
    /usr/bin/python3 -c "import torch, numpy, sentencepiece"
# compile FILE like core's SOURCE (its command in compile_commands.json), printing the CPU seconds
python3 - "$tmp" <<'EOF'
import json, os, resource, shlex, subprocess, sys
tmp = sys.argv[1]
db = json.load(open("build/compile_commands.json"))
def command(source):
    for e in db:
        if e["file"].endswith("/core/src/" + source):
            return e
    sys.exit(f"bench_ci.sh: {source} is not in build/compile_commands.json (ATTNLAB_UNITY_BUILD=ON? it lists groups)")
def cpu(source, file, label):
    e = command(source)
    args = shlex.split(e["command"])
    args[args.index("-o") + 1] = os.path.join(tmp, "x.o")
    args[args.index("-c") + 1] = file
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=e["directory"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(f"{seconds:7.1f} s CPU  {label}")
    return seconds
empty = os.path.join(tmp, "empty.cpp")
open(empty, "w").close()
cpu("model/masks.cpp", empty, "an empty file with core's torch PCH")
units = ["model/masks.cpp", "model/positional_encoding.cpp", "model/dropout.cpp", "model/attention.cpp",
         "model/low_precision.cpp", "model/layers.cpp", "model/transformer.cpp"]
alone = sum(cpu(u, os.path.abspath("core/src/" + u), u) for u in units)
unity = os.path.join(tmp, "unity_model.cpp")
with open(unity, "w") as f:
    f.writelines(f'#include "{os.path.abspath("core/src/" + u)}"\n' for u in units)
together = cpu(units[0], unity, "the same 7 as one unit")
print(f"{alone:7.1f} s CPU  the 7 one by one ({alone / together:.1f}x)")
EOF
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tst_ctranslate2 tst_relative_positions tst_marian tst_ct2_conversion tst_hf_multilingual
                                 tst_quantized_loading tst_pivot tst_cli_argos)
for t in "${tests[@]}"; do
    QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=passive /usr/bin/time -f "$t: %e s wall, %U + %S s CPU" \
        build/bin/"$t" -o "$tmp/$t.txt,txt" >/dev/null || echo "$t failed: $(grep -m1 FAIL "$tmp/$t.txt")"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
