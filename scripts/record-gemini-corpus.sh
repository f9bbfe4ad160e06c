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
# built here). About 80 s for the 11 sessions (most of it the CLI's start-up; the 5xx one ~11 s).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-cassettes/gemini}
shift || true
if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q -p pi-harness
  PI_HARNESS=${CARGO_TARGET_DIR:-target}/debug/pi-harness
fi
mkdir -p "$OUT"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in cassettes/scripts/gemini/*.args; do names+=("$(basename "$f" .args)"); done
fi
for VERSION in ${GEMINI_VERSIONS:-0.61.0}; do
  gemini=${GEMINI:-$("$PI_HARNESS" install gemini "$VERSION" --print-path)}
  v=${VERSION%.0}
  SUFFIX=gm${v//./}
  for name in "${names[@]}"; do
    s=cassettes/scripts/gemini/$name
    desc=$(sed -n 's/^ *"description": *"\(.*\)",*$/\1/p' "$s.llm.json" | head -1)
    mapfile -t args < "$s.args"
    "$PI_HARNESS" record --agent gemini --pi "$gemini" --script "$s.llm.json" \
      --scenario "$name" ${desc:+--description "$desc"} --timeout 120 \
      --out "$OUT/$name.$SUFFIX.cassette.jsonl" "${args[@]}"
  done
done
