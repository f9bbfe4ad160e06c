#!/usr/bin/env bash
# The live drift lane: install real pi, Claude Code, Codex and Gemini CLI, re-record the corpora
# into a temp dir, and compare the fresh cassettes with the committed ones (cassettes/recorded, the
# RPC sessions in cassettes/rpc, the Claude Code sessions in cassettes/claude, the Codex runs in
# cassettes/codex, the Gemini CLI runs in cassettes/gemini). Fails with a readable diff
# when their normalized streams differ (timing and redacted fields aside).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
fresh="$(mktemp -d "${TMPDIR:-/tmp}/pi-harness-drift.XXXXXX")"
bash scripts/record-corpus.sh "$fresh"
bash scripts/record-claude-corpus.sh "$fresh/claude"
bash scripts/record-codex-corpus.sh "$fresh/codex"
bash scripts/record-gemini-corpus.sh "$fresh/gemini"
if cargo run -q -p pi-harness -- drift --committed cassettes/recorded --fresh "$fresh" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/rpc --fresh "$fresh/rpc" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/claude --fresh "$fresh/claude" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/codex --fresh "$fresh/codex" \
  && cargo run -q -p pi-harness -- drift --committed cassettes/gemini --fresh "$fresh/gemini"; then
  rm -rf "$fresh"
  echo "drift lane: passed in $(( $(date +%s) - start )) s"
else
  echo "drift lane: FAILED in $(( $(date +%s) - start )) s; fresh cassettes kept in $fresh" >&2
  exit 1
fi
