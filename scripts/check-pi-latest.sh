#!/usr/bin/env bash
# A notice, never a failure: ask the npm registry for pi's and Claude Code's latest releases and
# say so when one is newer than the newest version pi-harness pins (pi: harness/grammar/src/
# version.rs; Claude Code: scripts/install-claude.sh, whose header says how to follow one).
#
# Following a new release is a data change: add it to KNOWN_VERSIONS with what it changed,
# teach scripts/install-pi.sh to install it, record the corpus on it (scripts/record-corpus.sh)
# and regenerate docs/pi-versions.md (scripts/pi-versions.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
pinned=$(sed -n 's/^pub const KNOWN_VERSIONS: &\[&str\] = &\[\(.*\)\];/\1/p' harness/grammar/src/version.rs \
  | tr -d '" ' | tr ',' '\n' | sort -V | tail -1)
if [ -z "$pinned" ]; then
  echo "check-pi-latest: NOTICE: cannot read the pinned versions from harness/grammar/src/version.rs"
  exit 0
fi
latest=$(npm view @earendil-works/pi-coding-agent version 2>/dev/null | tail -1)
if [ -z "$latest" ]; then
  echo "check-pi-latest: NOTICE: the npm registry did not answer; pinned newest is pi $pinned"
  exit 0
fi
newest=$(printf '%s\n%s\n' "$pinned" "$latest" | sort -V | tail -1)
if [ "$latest" != "$pinned" ] && [ "$newest" = "$latest" ]; then
  echo "check-pi-latest: NOTICE: pi $latest is out (npm), newer than the newest pinned version $pinned."
  echo "check-pi-latest: NOTICE: to follow it, see the steps at the top of scripts/check-pi-latest.sh."
else
  echo "check-pi-latest: pi $latest on npm; pinned newest $pinned: up to date"
fi
claude_pinned=$(bash scripts/install-claude.sh --versions | tail -1)
claude_latest=$(npm view @anthropic-ai/claude-code-linux-x64 version 2>/dev/null | tail -1)
if [ -z "$claude_latest" ]; then
  echo "check-pi-latest: NOTICE: the npm registry did not answer; pinned newest is Claude Code $claude_pinned"
elif [ "$claude_latest" != "$claude_pinned" ] \
  && [ "$(printf '%s\n%s\n' "$claude_pinned" "$claude_latest" | sort -V | tail -1)" = "$claude_latest" ]; then
  echo "check-pi-latest: NOTICE: Claude Code $claude_latest is out (npm), newer than the newest pinned version $claude_pinned."
  echo "check-pi-latest: NOTICE: to follow it, see the steps at the top of scripts/install-claude.sh."
else
  echo "check-pi-latest: Claude Code $claude_latest on npm; pinned newest $claude_pinned: up to date"
fi
exit 0
