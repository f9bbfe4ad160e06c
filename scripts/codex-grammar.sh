#!/usr/bin/env bash
# Writes Codex CLI's command line as data, from an installed `codex`, into
# harness/grammar/data/codex/VERSION/ (or DIR/VERSION/ with --out DIR): what `--version`,
# `--help` (long and short) of the top level, `exec` and `exec resume`, and `exec --version`
# print. pi_grammar::codex reads its options from these help texts (embedded at build time);
# supporting a new release is running this on it and committing the directory.
#   bash scripts/codex-grammar.sh /path/to/node_modules/.bin/codex [--out DIR]
set -euo pipefail
codex=${1:?usage: codex-grammar.sh PATH_TO_CODEX [--out DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
base="$root/harness/grammar/data/codex"
if [ "${2:-}" = "--out" ]; then base=${3:?--out needs a directory}; fi
# A CODEX_HOME of its own: the help texts do not depend on it, and nothing is left behind
# (under /tmp the CLI adds a warning on stderr, which is not kept).
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
run() { CODEX_HOME="$home" "$codex" "$@" </dev/null 2>/dev/null; }
version=$(run --version | awk '{print $2}')
case "$version" in [0-9]*.[0-9]*.[0-9]*) ;; *) echo "codex-grammar.sh: cannot read the version of $codex" >&2; exit 1 ;; esac
out="$base/$version"
mkdir -p "$out"
run --version >"$out/version.txt"
run --help >"$out/help.txt"
run exec --help >"$out/exec-help.txt"
run exec -h >"$out/exec-short-help.txt"
run exec resume --help >"$out/exec-resume-help.txt"
run exec --version >"$out/exec-version.txt"
echo "wrote $out"
