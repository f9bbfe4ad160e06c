#!/usr/bin/env bash
# Re-record the whole corpus from real pi: installs both pinned versions (scripts/install-pi.sh),
# then records every scenario of cassettes/scripts/corpus.json on pi 0.73.1 and 0.87.1.
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
[ "${#paths[@]}" -ge 2 ] || { echo "record-corpus.sh: install-pi.sh did not print the pinned pi paths" >&2; exit 1; }
cargo build -q -p pi-harness
cargo run -q -p pi-harness -- record-corpus \
  --manifest cassettes/scripts/corpus.json --pi73 "${paths[0]}" --pi87 "${paths[1]}" --out "$out" "$@"
