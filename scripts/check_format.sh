#!/usr/bin/env bash
# Checks that every C++ file git tracks is formatted as .clang-format says, with Debian 12's
# clang-format 14 (pinned: another version formats some constructs differently). CI runs it
# (.ci/run). Lists the files that differ and exits 1; nothing is changed.
#   scripts/check_format.sh          check
#   scripts/check_format.sh --fix    reformat those files in place
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format-14 >/dev/null || scripts/install_packages.sh
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ "${1:-}" = --fix ]; then
  clang-format-14 -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format-14 --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format (scripts/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files follow .clang-format (clang-format 14)"
