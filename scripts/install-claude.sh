#!/usr/bin/env bash
# Install the native Claude Code CLI (linux-x64) from the npm registry, idempotently, and print
# the binary's path. Only the platform package is fetched (`npm pack`: no install scripts), its
# sha512 checked against the pinned integrity value, and only the binary extracted.
# Usage: scripts/install-claude.sh [VERSION] [DEST]
#   VERSION: a pinned version (below; default the newest), DEST: default
#   ~/.cache/pi-harness/claude-VERSION. `--versions` prints the pinned versions, oldest first.
# Needs npm (and its node), tar; ~175 MB download, 381 MB on disk per version.
#
# Following a new release: add its version and the registry's integrity value
# (`npm view @anthropic-ai/claude-code-linux-x64@X dist.integrity`) here, regenerate its
# command-line data (scripts/claude-grammar.sh), record the corpus on it
# (scripts/record-claude-corpus.sh cassettes/claude VERSION=X) and bless conform's streams: step by
# step in docs/pinning.md. Until then a newer release works unverified (recorded and replayed with
# the newest pinned release's grammar).
set -euo pipefail
PKG=@anthropic-ai/claude-code-linux-x64
declare -A INTEGRITY=(
  [2.1.330]='sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ=='
  [2.1.332]='sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw=='
)
PINNED=$(printf '%s\n' "${!INTEGRITY[@]}" | sort -V)
if [ "${1:-}" = --versions ]; then echo "$PINNED"; exit 0; fi
VERSION=${1:-$(echo "$PINNED" | tail -1)}
[ -n "${INTEGRITY[$VERSION]:-}" ] || { echo "install-claude.sh: $VERSION is not pinned (pinned: $(echo $PINNED))" >&2; exit 2; }
DEST=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-harness/claude-$VERSION}
BIN=$DEST/package/claude
if [ -x "$BIN" ] && [ "$(HOME=/nonexistent "$BIN" --version 2>/dev/null)" = "$VERSION (Claude Code)" ]; then
  echo "$BIN"; exit 0
fi
mkdir -p "$(dirname "$DEST")"
tmp=$(mktemp -d "$DEST.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null ) || { echo "install-claude.sh: npm pack of $PKG@$VERSION failed" >&2; exit 1; }
tgz=$tmp/anthropic-ai-claude-code-linux-x64-$VERSION.tgz
# node is there with npm; no openssl needed.
got="sha512-$(node -e 'process.stdout.write(require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tgz")"
[ "$got" = "${INTEGRITY[$VERSION]}" ] || { echo "install-claude.sh: integrity mismatch: $got" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp" package/claude package/package.json
# Kept where `pi-harness install claude` looks: it checks the cache against it before running anything there.
mkdir -p "$tmp/.pinned" && mv "$tgz" "$tmp/.pinned/@anthropic-ai+claude-code-linux-x64.tgz"
[ "$(HOME=$tmp "$tmp/package/claude" --version)" = "$VERSION (Claude Code)" ] || { echo "install-claude.sh: --version check failed" >&2; exit 1; }
rm -rf "$tmp/.claude" "$tmp/.claude.json"
chmod 755 "$tmp"; rm -rf "$DEST"; mv "$tmp" "$DEST"; trap - EXIT
echo "$BIN"
