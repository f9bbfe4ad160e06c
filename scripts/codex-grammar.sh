#!/usr/bin/env bash
# Writes Codex CLI's command line as data, from an installed `codex`, into
# harness/grammar/data/codex/VERSION/: what `--version`, `--help` (long and short) of the
# top level, `exec` and `exec resume` print. pi_grammar::codex reads its options from these
# help texts (embedded at build time); supporting a new release is running this on it and
# committing the directory.
#   bash scripts/codex-grammar.sh /path/to/node_modules/.bin/codex
set -euo pipefail
codex=${1:?usage: codex-grammar.sh PATH_TO_CODEX}
root=$(cd "$(dirname "$0")/.." && pwd)
# A CODEX_HOME of its own outside /tmp (under /tmp the CLI warns on stderr; help goes to stdout).
home=$(mktemp -d "${HOME:-/root}/.codex-grammar.XXXXXX")
trap 'rm -rf "$home"' EXIT
run() { CODEX_HOME="$home" "$codex" "$@" </dev/null; }
version=$(run --version | awk '{print $2}')
case "$version" in [0-9]*.[0-9]*.[0-9]*) ;; *) echo "codex-grammar.sh: cannot read the version of $codex" >&2; exit 1 ;; esac
out="$root/harness/grammar/data/codex/$version"
mkdir -p "$out"
run --version >"$out/version.txt"
run --help >"$out/help.txt"
run exec --help >"$out/exec-help.txt"
run exec -h >"$out/exec-short-help.txt"
run exec resume --help >"$out/exec-resume-help.txt"
run exec --version >"$out/exec-version.txt"
echo "wrote $out"
