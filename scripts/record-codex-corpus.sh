#!/usr/bin/env bash
# Record the Codex CLI corpus from the real CLI: every cassettes/scripts/codex/NAME.llm.json (the
# scripted model) with NAME.args (the recorder's flags and Codex's arguments, one per line, `--`
# between them), into OUT (default cassettes/codex) as NAME.cxVERSION.cassette.jsonl (cx0169 for
# 0.169.0: the version's digits without a trailing `.0`). Each run rewrites its cassette from
# the script alone, so running it twice gives the same corpus (ids, paths and timestamps redacted;
# only measured delays differ, and which leftover the notes show already reaped, as `[bash]`).
# Usage: [CODEX_VERSIONS="0.169.0"] [CODEX=path/to/codex] scripts/record-codex-corpus.sh [OUT] [NAME...]
# Installs each version with `pi-harness install codex VERSION --print-path` (npm, ~400 MB, cached)
# unless CODEX names an executable. Needs the pi-harness binary (PI_HARNESS, default: built here).
# PI_HARNESS_RECORD_JOBS=N records N at a time (default 1: one after another).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh
OUT=${1:-cassettes/codex}
shift || true
if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q --locked -p pi-harness
  PI_HARNESS=${CARGO_TARGET_DIR:-target}/debug/pi-harness
fi
mkdir -p "$OUT"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in cassettes/scripts/codex/*.args; do names+=("$(basename "$f" .args)"); done
fi
record_one() { # VERSION/NAME
  local VERSION="${1%%/*}" name="${1#*/}" codex v s desc args
  codex=${cli_of[$VERSION]}
  v=${VERSION%.0}
  s=cassettes/scripts/codex/$name
  desc=$(sed -n 's/^ *"description": *"\(.*\)",*$/\1/p' "$s.llm.json" | head -1)
  mapfile -t args < "$s.args"
  "$PI_HARNESS" record --agent codex --pi "$codex" --script "$s.llm.json" \
    --scenario "$name" ${desc:+--description "$desc"} --timeout 120 \
    --out "$OUT/$name.cx${v//./}.cassette.jsonl" "${args[@]}"
}
declare -A cli_of=()
jobs=()
for VERSION in ${CODEX_VERSIONS:-0.169.0}; do
  # Installed once, before the recordings that share it.
  cli_of[$VERSION]=${CODEX:-$("$PI_HARNESS" install codex "$VERSION" --print-path)}
  for name in "${names[@]}"; do jobs+=("$VERSION/$name"); done
done
run_jobs "${PI_HARNESS_RECORD_JOBS:-1}" record_one "${jobs[@]}"
