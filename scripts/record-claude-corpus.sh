#!/usr/bin/env bash
# Record the Claude Code corpus from the real CLI: every cassettes/scripts/claude/NAME.llm.json (the
# scripted model) with NAME.client.json (the host's side, when there is one), into OUT (default
# cassettes/claude). NAME.args, when there is one, holds the recorder's flags and the CLI's arguments
# (one per line, `--` between them) instead of the default two-way stream-json session's.
# Usage: [CLAUDE_VERSIONS="2.1.332"] scripts/record-claude-corpus.sh [OUT] [NAME...]
# Records on every version scripts/install-claude.sh pins (NAME.ccVERSION.cassette.jsonl), or on
# those CLAUDE_VERSIONS names.
# Needs the pi-harness binary (PI_HARNESS, default target/debug/pi-harness) and installs each CLI
# with scripts/install-claude.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-cassettes/claude}
shift || true
cargo build -q -p pi-harness
PI_HARNESS=${PI_HARNESS:-target/debug/pi-harness}
mkdir -p "$OUT"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in cassettes/scripts/claude/*.llm.json; do names+=("$(basename "$f" .llm.json)"); done
fi
versions=${CLAUDE_VERSIONS:-$(scripts/install-claude.sh --versions)}
for VERSION in $versions; do
CLAUDE=$(scripts/install-claude.sh "$VERSION")
SUFFIX=cc${VERSION//./}
for name in "${names[@]}"; do
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
  "$PI_HARNESS" record --agent claude --pi "$CLAUDE" --script "$s.llm.json" "${client[@]}" \
    --scenario "$name" ${desc:+--description "$desc"} --timeout 120 \
    --out "$OUT/$name.$SUFFIX.cassette.jsonl" "${args[@]}"
done
done
