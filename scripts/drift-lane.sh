#!/usr/bin/env bash
# The live drift lane: install real pi, Claude Code and Codex, re-record the corpora into a temp
# dir, and compare the fresh cassettes with the committed ones (cassettes/recorded, the RPC
# sessions in cassettes/rpc, the Claude Code sessions in cassettes/claude, the Codex runs in
# cassettes/codex). Fails with a readable diff
# when their normalized streams differ (timing and redacted fields aside).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
fresh="$(mktemp -d "${TMPDIR:-/tmp}/pi-harness-drift.XXXXXX")"
bash scripts/record-corpus.sh "$fresh"
bash scripts/record-claude-corpus.sh "$fresh/claude"
bash scripts/record-codex-corpus.sh "$fresh/codex"
if cargo run -q -p pi-harness -- drift --committed cassettes/recorded --fresh "$fresh" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/rpc --fresh "$fresh/rpc" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/claude --fresh "$fresh/claude" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/codex --fresh "$fresh/codex"; then
  rm -rf "$fresh"
  echo "drift lane: passed in $(( $(date +%s) - start )) s"
else
  echo "drift lane: FAILED in $(( $(date +%s) - start )) s; fresh cassettes kept in $fresh" >&2
  exit 1
fi
