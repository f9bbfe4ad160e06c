#!/usr/bin/env bash
# Record the Gemini CLI corpus from the real CLI: every cassettes/scripts/gemini/NAME.llm.json (the
# scripted model) with NAME.args (the recorder's flags and Gemini CLI's arguments, one per line, `--`
# between them), into OUT (default cassettes/gemini) as NAME.gmVERSION.cassette.jsonl (gm061 for
# 0.61.0: the version's digits without a trailing `.0`). Each run rewrites its cassette from the
# script alone, so running it twice gives the same corpus (ids, paths and the clock's stamps
# redacted; only measured delays differ).
# Usage: [GEMINI_VERSIONS="0.61.0"] [GEMINI=path/to/gemini] scripts/record-gemini-corpus.sh [OUT] [NAME...]
# Installs each version with `pi-harness install gemini VERSION --print-path` (npm, cached) unless
# GEMINI names an executable. Needs node 20 or later and the pi-harness binary (PI_HARNESS, default:
# built here). About 80 s for the 11 sessions one after another (most of it the CLI's start-up; the
# 5xx one ~11 s); PI_HARNESS_RECORD_JOBS=N records N at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh
OUT=${1:-cassettes/gemini}
shift || true
if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q --locked -p pi-harness
  PI_HARNESS=${CARGO_TARGET_DIR:-target}/debug/pi-harness
fi
mkdir -p "$OUT"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in cassettes/scripts/gemini/*.args; do names+=("$(basename "$f" .args)"); done
fi
record_one() { # VERSION/NAME
  local VERSION="${1%%/*}" name="${1#*/}" gemini v s desc args
  gemini=${cli_of[$VERSION]}
  v=${VERSION%.0}
  s=cassettes/scripts/gemini/$name
  desc=$(sed -n 's/^ *"description": *"\(.*\)",*$/\1/p' "$s.llm.json" | head -1)
  mapfile -t args < "$s.args"
  "$PI_HARNESS" record --agent gemini --pi "$gemini" --script "$s.llm.json" \
    --scenario "$name" ${desc:+--description "$desc"} --timeout 120 \
    --out "$OUT/$name.gm${v//./}.cassette.jsonl" "${args[@]}"
}
declare -A cli_of=()
jobs=()
for VERSION in ${GEMINI_VERSIONS:-0.61.0}; do
  # Installed once, before the recordings that share it.
  cli_of[$VERSION]=${GEMINI:-$("$PI_HARNESS" install gemini "$VERSION" --print-path)}
  for name in "${names[@]}"; do jobs+=("$VERSION/$name"); done
done
run_jobs "${PI_HARNESS_RECORD_JOBS:-1}" record_one "${jobs[@]}"
