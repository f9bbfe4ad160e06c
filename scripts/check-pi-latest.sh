#!/usr/bin/env bash
# A notice, never a failure: for every CLI pi-harness pins (the table below), ask the npm
# registry for its latest release and say so when it is newer than the newest pinned version.
# Such a release already works, unverified (recorded and replayed with the newest pinned
# grammar); pinning it is a data change, step by step in docs/pinning.md.
#
# Adding a CLI to the registry adds its notice: one line in CLIS, naming its npm package and its
# row's file (whose releases, `version: "X",` lines, are the pinned versions).
#
# PI_HARNESS_NPM names the npm to ask (default: npm); a test gives it a stand-in.
set -uo pipefail
cd "$(dirname "$0")/.."
NPM=${PI_HARNESS_NPM:-npm}

pinned_row() { # the pinned releases of an agent's row in the registry (harness/grammar/src/agents/NAME.rs)
  sed -n 's/^ *version: "\([^"]*\)",$/\1/p' "harness/grammar/src/agents/$1.rs"
}

# NAME|NPM PACKAGE|ITS ROW IN THE REGISTRY (harness/grammar/src/agents/ROW.rs)
CLIS=(
  "pi|@earendil-works/pi-coding-agent|pi"
  "Claude Code|@anthropic-ai/claude-code-linux-x64|claude"
  "Codex|@openai/codex|codex"
  "Gemini CLI|@google/gemini-cli|gemini"
)

for row in "${CLIS[@]}"; do
  IFS='|' read -r name package file <<<"$row"
  pinned=$(pinned_row "$file" 2>/dev/null | sort -V | tail -1)
  if [ -z "$pinned" ]; then
    echo "check-pi-latest: NOTICE: cannot read the pinned versions of $name (harness/grammar/src/agents/$file.rs)"
    continue
  fi
  latest=$("$NPM" view "$package" version 2>/dev/null | tail -1)
  if [ -z "$latest" ]; then
    echo "check-pi-latest: NOTICE: the npm registry did not answer for $package; pinned newest is $name $pinned"
    continue
  fi
  newest=$(printf '%s\n%s\n' "$pinned" "$latest" | sort -V | tail -1)
  if [ "$latest" != "$pinned" ] && [ "$newest" = "$latest" ]; then
    echo "check-pi-latest: NOTICE: $name $latest is out (npm), newer than the newest pinned version $pinned."
    echo "check-pi-latest: NOTICE: it works now, unverified (read with $name $pinned's grammar); to pin it, follow docs/pinning.md."
  else
    echo "check-pi-latest: $name $latest on npm; pinned newest $pinned: up to date"
  fi
done
exit 0
