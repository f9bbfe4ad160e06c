#!/usr/bin/env bash
# Re-record the whole corpus from real pi: installs every pinned version (scripts/install-pi.sh),
# then records every scenario of cassettes/scripts/corpus.json on each (0.73.1, 0.87.1, 1.5.2).
#
#   scripts/record-corpus.sh [OUT_DIR] [record-corpus options, e.g. --only tool_bash]
#
# OUT_DIR defaults to cassettes/recorded (the committed corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-cassettes/recorded}"
[ $# -gt 0 ] && shift
paths=()
while IFS= read -r line; do paths+=("$line"); done < <(bash scripts/install-pi.sh)
[ "${#paths[@]}" -ge 1 ] || { echo "record-corpus.sh: install-pi.sh printed no pi path" >&2; exit 1; }
pi_flags=()
for p in "${paths[@]}"; do pi_flags+=(--pi "$p"); done
cargo build -q -p pi-harness
cargo run -q -p pi-harness -- record-corpus \
  --manifest cassettes/scripts/corpus.json "${pi_flags[@]}" --out "$out" "$@"
