#!/usr/bin/env bash
# A notice, never a failure: for every CLI pi-harness pins (the table below), ask the npm
# registry for its latest release and say so when it is newer than the newest pinned version.
# Such a release already works, unverified (recorded and replayed with the newest pinned
# grammar); pinning it is a data change, step by step in docs/pinning.md.
#
# Adding a pinned CLI (Codex, Gemini CLI, ...) adds its notice: one line in CLIS, naming the
# function that prints its pinned versions (oldest first, one a line).
#
# PI_HARNESS_NPM names the npm to ask (default: npm); a test gives it a stand-in.
set -uo pipefail
cd "$(dirname "$0")/.."
NPM=${PI_HARNESS_NPM:-npm}

pinned_pi() { # KNOWN_VERSIONS in harness/grammar/src/version.rs
  sed -n 's/^pub const KNOWN_VERSIONS: &\[&str\] = &\[\(.*\)\];/\1/p' harness/grammar/src/version.rs \
    | tr -d '" ' | tr ',' '\n' | sed '/^$/d'
}
pinned_claude() { # the versions scripts/install-claude.sh installs
  bash scripts/install-claude.sh --versions
}
pinned_codex() { # RELEASES in harness/grammar/src/codex/mod.rs
  sed -n 's/^const RELEASES: &\[&str\] = &\[\(.*\)\];/\1/p' harness/grammar/src/codex/mod.rs \
    | tr -d '" ' | tr ',' '\n' | sed '/^$/d'
}
pinned_gemini() { # RELEASES in harness/grammar/src/gemini/mod.rs
  sed -n 's/^const RELEASES: &\[&str\] = &\[\(.*\)\];/\1/p' harness/grammar/src/gemini/mod.rs \
    | tr -d '" ' | tr ',' '\n' | sed '/^$/d'
}

# NAME|NPM PACKAGE|FUNCTION PRINTING THE PINNED VERSIONS
CLIS=(
  "pi|@earendil-works/pi-coding-agent|pinned_pi"
  "Claude Code|@anthropic-ai/claude-code-linux-x64|pinned_claude"
  "Codex|@openai/codex|pinned_codex"
  "Gemini CLI|@google/gemini-cli|pinned_gemini"
)

for row in "${CLIS[@]}"; do
  IFS='|' read -r name package pinned_of <<<"$row"
  pinned=$("$pinned_of" 2>/dev/null | sort -V | tail -1)
  if [ -z "$pinned" ]; then
    echo "check-pi-latest: NOTICE: cannot read the pinned versions of $name ($pinned_of)"
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
