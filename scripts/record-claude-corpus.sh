#!/usr/bin/env bash
# Record the Claude Code corpus from the real CLI: every cassettes/scripts/claude/NAME.llm.json (the
# scripted model) with NAME.client.json (the host's side, when there is one), into OUT (default
# cassettes/claude). NAME.args, when there is one, holds the recorder's flags and the CLI's arguments
# (one per line, `--` between them) instead of the default two-way stream-json session's.
# Usage: [CLAUDE_VERSIONS="2.1.332"] scripts/record-claude-corpus.sh [OUT] [NAME...]
# Records on every version scripts/install-claude.sh pins (NAME.ccVERSION.cassette.jsonl), or on
# those CLAUDE_VERSIONS names.
# Needs the pi-harness binary (PI_HARNESS, default: built here) and installs each CLI with
# scripts/install-claude.sh. PI_HARNESS_RECORD_JOBS=N records N at a time (default 1: one after
# another).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh
OUT=${1:-cassettes/claude}
shift || true
if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q --locked -p pi-harness
  PI_HARNESS=${CARGO_TARGET_DIR:-target}/debug/pi-harness
fi
mkdir -p "$OUT"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in cassettes/scripts/claude/*.llm.json; do names+=("$(basename "$f" .llm.json)"); done
fi
record_one() { # VERSION/NAME
  local VERSION="${1%%/*}" name="${1#*/}" s desc client args
  s=cassettes/scripts/claude/$name
  desc=$(sed -n 's/^ *"description": *"\(.*\)",*$/\1/p' "$s.llm.json" | head -1)
  client=()
  [ -f "$s.client.json" ] && client=(--client-script "$s.client.json")
  if [ -f "$s.args" ]; then
    mapfile -t args < "$s.args"
  else
    args=(-- -p --input-format stream-json --output-format stream-json --verbose --include-partial-messages
          --permission-prompt-tool stdio)
  fi
  "$PI_HARNESS" record --agent claude --pi "${claude_of[$VERSION]}" --script "$s.llm.json" "${client[@]}" \
    --scenario "$name" ${desc:+--description "$desc"} --timeout 120 \
    --out "$OUT/$name.cc${VERSION//./}.cassette.jsonl" "${args[@]}"
}
declare -A claude_of=()
jobs=()
for VERSION in ${CLAUDE_VERSIONS:-$(scripts/install-claude.sh --versions)}; do
  # Installed once, before the recordings that share it.
  claude_of[$VERSION]=$(scripts/install-claude.sh "$VERSION")
  for name in "${names[@]}"; do jobs+=("$VERSION/$name"); done
done
run_jobs "${PI_HARNESS_RECORD_JOBS:-1}" record_one "${jobs[@]}"
