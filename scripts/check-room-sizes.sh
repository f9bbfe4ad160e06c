#!/usr/bin/env bash
# The house rule that no one has to count: no non-test Rust source file over 800 lines.
# Test code is exempt: files named tests.rs, and everything under a crate's tests/ or benches/.
# (Function length is clippy's too_many_lines at 150, set in clippy.toml; CI's clippy enforces it.)
# An exception is named here with its reason, and in docs/architecture.md.
set -euo pipefail
cd "$(dirname "$0")/.."
max=800
exceptions=()
bad=0
while IFS= read -r f; do
  case "$f" in
    */tests/*|*/benches/*|*/tests.rs|examples/*) continue ;;
  esac
  for e in "${exceptions[@]+"${exceptions[@]}"}"; do
    [ "$f" = "$e" ] && continue 2
  done
  n=$(wc -l < "$f")
  if [ "$n" -gt "$max" ]; then
    echo "error: $f: $n lines, over the $max a source file may have (split it; docs/architecture.md shows the rooms)"
    bad=1
  fi
done < <(git ls-files '*.rs')
if [ "$bad" -eq 0 ]; then
  echo "room sizes: every non-test source file is at most $max lines"
fi
exit "$bad"
