#!/usr/bin/env bash
# Change-gated checks: the slow ones that only prove that committed data still reproduces from
# a pinned release (the grammar scripts' tests) run when their inputs differ from the stamp the
# check itself wrote the last time it passed (.ci/stamps/NAME, committed with the change).
#
#   bash .ci/gate.sh NAME           the check, when its inputs differ from its stamp (else a line
#                                   saying so); the stamp is rewritten when the check passed
#   bash .ci/gate.sh --status NAME  only the line saying whether it would run, and why; exit 0:
#                                   it would run, 3: its stamp is current
#   bash .ci/gate.sh --inputs NAME  its inputs: files and directories, the variables, `node`
#   bash .ci/gate.sh --list         the gates
#
# A gate's inputs: its files (the script, the committed data, the agent's row in the registry
# that pins its releases and their npm packages, harness/grammar/src/agents/AGENT.rs, for pi and
# Claude Code also the install script that fetches them, and the test that runs the script),
# the release itself (the name and version of the npm package each variable's CLI comes from:
# its package.json, found above the CLI's real path) and, for CLIs that run on node,
# `node --version`. The check is the gate's test, run by
# `.ci/it CRATE FILTER`, with the variables naming the real CLIs set: without one the test would
# pass without checking anything, so the gate refuses to run. Exit status: the check's, or 0
# when it did not need to run; 2 for a usage error or a variable not set.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# NAME | files and directories (the stamp lists each) | the test (CRATE:FILTER) | the variables
# naming the CLIs it runs | node (yes: the CLIs or the script run on node)
GATES=(
  "pi-grammar|scripts/pi-grammar.sh harness/grammar/data/pi scripts/install-pi.sh harness/grammar/src/agents/pi.rs harness/grammar/tests/it/real_grammar_scripts.rs|pi-grammar:pi_grammar_sh|PI_HARNESS_REAL_PI73 PI_HARNESS_REAL_PI87 PI_HARNESS_REAL_PI152|yes"
  "claude-grammar|scripts/claude-grammar.sh harness/grammar/data/claude scripts/install-claude.sh harness/grammar/src/agents/claude.rs harness/grammar/tests/it/real_grammar_scripts.rs|pi-grammar:claude_grammar_sh|PI_HARNESS_REAL_CLAUDE|no"
  "codex-grammar|scripts/codex-grammar.sh harness/grammar/data/codex harness/grammar/src/agents/codex.rs harness/grammar/tests/it/real_grammar_scripts.rs|pi-grammar:codex_grammar_sh|PI_HARNESS_REAL_CODEX|yes"
  "gemini-grammar|scripts/gemini-grammar.sh harness/grammar/data/gemini harness/grammar/src/agents/gemini.rs harness/grammar/tests/it/real_grammar_scripts.rs|pi-grammar:gemini_grammar_sh|PI_HARNESS_REAL_GEMINI|yes"
)

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

gate_row() { # NAME -> sets files, test, vars, node
  local row name
  for row in "${GATES[@]}"; do
    IFS='|' read -r name files test vars node <<<"$row"
    [ "$name" = "$1" ] && return 0
  done
  echo "gate.sh: no gate named '$1' (gates: $(list | tr '\n' ' '))" >&2
  exit 2
}

list() { local row; for row in "${GATES[@]}"; do echo "${row%%|*}"; done; }

hash_path() { # FILE or DIR -> sha256 of its files' paths and contents
  if [ -d "$1" ]; then
    (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -c1-64
  elif [ -f "$1" ]; then
    sha256sum <"$1" | cut -c1-64
  else
    echo missing
  fi
}

release_of() { # CLI path -> NAME@VERSION of the first package.json above its real path naming both
  local dir top name version
  dir="$(dirname "$(readlink -f "$1")")"
  while :; do
    if [ -f "$dir/package.json" ]; then
      # Its top-level keys: on lines indented by one tab or two spaces at most.
      top="$(grep -E '^(	| {0,2}|\{ *)"' "$dir/package.json" || true)"
      name="$(grep -o '"name": *"[^"]*"' <<<"$top" | head -1 | sed 's/.*: *"//; s/"$//')"
      version="$(grep -o '"version": *"[^"]*"' <<<"$top" | head -1 | sed 's/.*: *"//; s/"$//')"
      if [ -n "$name" ] && [ -n "$version" ]; then
        echo "$name@$version"
        return
      fi
    fi
    [ "$dir" != / ] || break
    dir="$(dirname "$dir")"
  done
  echo "no package.json above the CLI"
}

inputs() { # the stamp's lines for the gate read by gate_row (what the inputs are now)
  local f v
  for f in $files; do
    printf '%s  %s\n' "$(hash_path "$f")" "$f"
  done
  for v in $vars; do
    printf 'release  %s=%s\n' "$v" "$(release_of "${!v}")"
  done
  if [ "$node" = yes ]; then
    printf 'node  node=%s\n' "$(node --version 2>/dev/null || echo none)"
  fi
}

status() { # NAME -> prints the decision; 0: run, 3: the stamp is current
  local stamp=".ci/stamps/$1" now changed
  now="$(inputs)"
  if [ ! -f "$stamp" ]; then
    echo "gate $1: runs: no stamp ($stamp)"
    return 0
  fi
  if [ "$(grep -v '^#' "$stamp")" = "$now" ]; then
    echo "gate $1: skipped: its inputs are those its stamp names ($stamp)"
    return 3
  fi
  # What differs: the paths or variables of the lines that are not in the stamp.
  changed="$(grep -vxF -f <(grep -v '^#' "$stamp") <<<"$now" | sed 's/^[^ ]*  //; s/=.*//' | paste -sd, | sed 's/,/, /g')"
  echo "gate $1: runs: changed since its stamp: ${changed:-lines gone from the stamp}"
}

need_vars() {
  local v
  for v in $vars; do
    if [ -z "${!v:-}" ]; then
      echo "gate.sh: $v is not set: the check would pass without running (set it to the real CLI)" >&2
      exit 2
    fi
  done
}

case "${1:-}" in
  --list) [ $# -eq 1 ] || usage; list ;;
  --inputs)
    [ $# -eq 2 ] || usage
    gate_row "$2"
    printf '%s\n' $files $vars
    if [ "$node" = yes ]; then echo node; fi
    ;;
  --status)
    [ $# -eq 2 ] || usage
    gate_row "$2"
    need_vars
    status "$2"
    ;;
  -*|"") usage ;;
  *)
    [ $# -eq 1 ] || usage
    gate_row "$1"
    need_vars
    before="$(inputs)"
    status "$1" || { [ $? -eq 3 ] && exit 0; exit 2; }
    bash .ci/it "${test%%:*}" "${test#*:}"
    # The stamp names the inputs the check ran on (any change while it ran: no stamp).
    if [ "$(inputs)" != "$before" ]; then
      echo "gate $1: its inputs changed while it ran: no stamp written" >&2
      exit 1
    fi
    mkdir -p .ci/stamps
    {
      echo "# Written by \`bash .ci/gate.sh $1\` when its check passed on these inputs (do not edit: CI"
      echo "# runs the check whenever they differ; commit this file with the change that passed it)."
      printf '%s\n' "$before"
    } >".ci/stamps/$1"
    echo "gate $1: passed; stamp written (.ci/stamps/$1)"
    ;;
esac
