#!/usr/bin/env bash
# A notice, never a failure: ask the npm registry for pi's latest release and say so when it
# is newer than the newest version pi-harness pins (harness/grammar/src/version.rs).
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
exit 0
