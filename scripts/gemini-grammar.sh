#!/usr/bin/env bash
# Writes Gemini CLI's command line as data, from an installed `gemini`, into
# harness/grammar/data/gemini/VERSION/ (or DIR/VERSION/ with --out DIR): what `--version` and
# `--help` print. pi_grammar::gemini reads its options from the help text (embedded at build
# time); supporting a new release is running this on it and committing the directory.
#   bash scripts/gemini-grammar.sh /path/to/node_modules/.bin/gemini [--out DIR]
set -euo pipefail
gemini=${1:?usage: gemini-grammar.sh PATH_TO_GEMINI [--out DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
base="$root/harness/grammar/data/gemini"
if [ "${2:-}" = "--out" ]; then base=${3:?--out needs a directory}; fi
# A HOME of its own: the help text does not depend on it, and nothing is left behind.
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
run() { HOME="$home" GEMINI_CLI_NO_RELAUNCH=1 "$gemini" "$@" </dev/null 2>/dev/null; }
version=$(run --version)
case "$version" in [0-9]*.[0-9]*.[0-9]*) ;; *) echo "gemini-grammar.sh: cannot read the version of $gemini" >&2; exit 1 ;; esac
out="$base/$version"
mkdir -p "$out"
run --version >"$out/version.txt"
run --help >"$out/help.txt"
echo "wrote $out"
