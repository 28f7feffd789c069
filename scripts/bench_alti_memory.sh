#!/usr/bin/env bash
# ALTI+'s peak memory (issue 54): /usr/bin/time -v's maximum resident size of `attnlab-cli translate --attention`
# on one long sentence, without contributions, then with `--contributions alti+`, for each attnlab-cli given (e.g.
# a build from before the tiled decomposition and the current one, side by side in one run), on a random model of
# NLLB-600M's width: d_model 1024, 16 heads, feed-forward 4096, pre-norm (NLLB's), LAYERS + LAYERS layers (the
# peak is one block's: the number of layers changes the model's size, not ALTI+'s working set), a vocabulary of
# 8,000 (scripts/ct2_reference.py make), a source of PIECES pieces, greedy, the output capped at PIECES pieces (a
# random model rarely ends on its own).
#   scripts/bench_alti_memory.sh [WORK] [CLI...]   Environment: PIECES=200, LAYERS=2, PY=/usr/bin/python3
# CLI defaults to build/bin/attnlab-cli. Prints the load before and after.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PIECES=${PIECES:-200}
LAYERS=${LAYERS:-2}
PY=${PY:-/usr/bin/python3}
work=${1:-}
shift || true
clis=("$@")
[ ${#clis[@]} -gt 0 ] || clis=("$root/build/bin/attnlab-cli")
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
m="$work/nllb-width"
[ -f "$m/model.bin" ] || "$PY" "$root/scripts/ct2_reference.py" make --out "$m" --d-model 1024 --heads 16 \
  --ffn 4096 --layers "$LAYERS" --norm pre --vocab-size 8000 --share-embeddings --tie-projection --seed 1 >/dev/null
sentence=$("$PY" -c "import json,sys; v=json.load(open(sys.argv[1])); print(' '.join(v[100 + 37 * k % 7000] for k in range(int(sys.argv[2]))))" \
  "$m/shared_vocabulary.json" "$PIECES")

# One row: CLI LABEL EXTRA...
row() {
  local cli=$1 label=$2
  shift 2
  /usr/bin/time -v "$cli" translate -m "$m" --text "$sentence" --beam 1 --max-len "$PIECES" --max-len-ratio 0 \
    --attention "$work/out.json" "$@" >/dev/null 2>"$work/time.txt"
  local kb pieces wall
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
  pieces=$("$PY" -c "import json,sys; s=json.load(open(sys.argv[1]))['sentences'][0]; print('%d -> %d' % (len(s['source_pieces']), len(s['target_pieces'])))" \
    "$work/out.json" 2>/dev/null || echo "?")
  printf '| %s | %s | %s | %d MiB | %s |\n' "$label" "$pieces" "${*:-(none)}" $((kb / 1024)) "$wall"
}
printf '\n| attnlab-cli | pieces (source -> target) | contributions | peak resident | wall (load-dependent) |\n'
printf '| --- | --- | --- | ---: | ---: |\n'
for cli in "${clis[@]}"; do
  row "$cli" "$cli"
  row "$cli" "$cli" --contributions alti+
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
