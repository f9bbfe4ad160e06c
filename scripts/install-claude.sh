#!/usr/bin/env bash
# Install the native Claude Code CLI (linux-x64) from the npm registry, idempotently, and print
# the binary's path. Only the platform package is fetched (`npm pack`: no install scripts), its
# sha512 checked against the registry's integrity value, and only the binary extracted.
# Usage: scripts/install-claude.sh [DEST]   (default ~/.cache/pi-harness/claude-2.1.330)
# Needs npm (and its node), tar; ~175 MB download, 381 MB on disk.
set -euo pipefail
VERSION=2.1.330
PKG=@anthropic-ai/claude-code-linux-x64
INTEGRITY='sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ=='
DEST=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-harness/claude-$VERSION}
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
[ "$got" = "$INTEGRITY" ] || { echo "install-claude.sh: integrity mismatch: $got" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp" package/claude package/package.json
rm -f "$tgz"
[ "$(HOME=$tmp "$tmp/package/claude" --version)" = "$VERSION (Claude Code)" ] || { echo "install-claude.sh: --version check failed" >&2; exit 1; }
rm -rf "$tmp/.claude" "$tmp/.claude.json"
chmod 755 "$tmp"; rm -rf "$DEST"; mv "$tmp" "$DEST"; trap - EXIT
echo "$BIN"
