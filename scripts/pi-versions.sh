#!/usr/bin/env bash
# The version report: re-record the corpus from every pinned real pi into a temp dir, then
# write docs/pi-versions.md from those recordings (flags, events, fields, exit codes, signals).
#
#   scripts/pi-versions.sh            record fresh, then write docs/pi-versions.md
#   scripts/pi-versions.sh --committed  write it from the committed corpus (no recording)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p pi-harness
if [ "${1:-}" = "--committed" ]; then
  dir=cassettes/recorded
else
  dir="$(mktemp -d "${TMPDIR:-/tmp}/pi-versions.XXXXXX")"
  bash scripts/record-corpus.sh "$dir"
fi
cargo run -q -p pi-harness -- pi-versions --recorded "$dir" --out docs/pi-versions.md
echo "pi-versions.sh: wrote docs/pi-versions.md from $dir" >&2
