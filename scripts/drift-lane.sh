#!/usr/bin/env bash
# The live drift lane: install a real CLI, re-record its corpus into a temp dir, and compare the
# fresh cassettes with the committed ones. Fails with a readable diff when their normalized
# streams differ (timing and redacted fields aside).
#
#   scripts/drift-lane.sh [CLI...]      CLI: pi, claude, codex, gemini (default: all of them,
#                                       two CLIs side by side)
#
# pi re-records cassettes/recorded and the RPC sessions in cassettes/rpc (0.73.1, 0.87.1, 1.5.2),
# claude the Claude Code sessions in cassettes/claude (2.1.330, 2.1.332), codex the Codex runs in
# cassettes/codex, gemini the Gemini CLI runs in cassettes/gemini. Uses the pi-harness binary
# PI_HARNESS names (default: built here, `cargo build -p pi-harness`). Adding a CLI is a row of
# DRIFT. PI_HARNESS_RECORD_JOBS=N has each CLI's recorder record N sessions at a time (default 1).
# Exit status: 0 when every CLI's corpus matched, 1 when one differed or did not record,
# 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh

# CLI | its recorder (scripts/..., recording into the directory it is given) | what is compared:
# committed directory:its subdirectory in the fresh one, ...
DRIFT=(
  "pi|record-corpus.sh|cassettes/recorded:. cassettes/rpc:rpc"
  "claude|record-claude-corpus.sh|cassettes/claude:."
  "codex|record-codex-corpus.sh|cassettes/codex:."
  "gemini|record-gemini-corpus.sh|cassettes/gemini:."
)

clis=("$@")
if [ ${#clis[@]} -eq 0 ]; then
  for row in "${DRIFT[@]}"; do clis+=("${row%%|*}"); done
fi
for cli in "${clis[@]}"; do
  printf '%s\n' "${DRIFT[@]}" | grep -q "^$cli|" || {
    echo "drift-lane.sh: no CLI named '$cli' (known: $(printf '%s\n' "${DRIFT[@]}" | cut -d'|' -f1 | paste -sd' '))" >&2
    exit 2
  }
done

if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q --locked -p pi-harness
  PI_HARNESS="${CARGO_TARGET_DIR:-target}/debug/pi-harness"
fi
PI_HARNESS="$(cd "$(dirname "$PI_HARNESS")" && pwd)/$(basename "$PI_HARNESS")"
export PI_HARNESS

drift_one() { # CLI: record into a temp dir, compare; keep the fresh cassettes when they differ
  local cli="$1" row recorder pairs fresh start pair committed sub ok=1
  row="$(printf '%s\n' "${DRIFT[@]}" | grep "^$cli|")"
  IFS='|' read -r _ recorder pairs <<<"$row"
  start=$(date +%s)
  fresh="$(mktemp -d "${TMPDIR:-/tmp}/pi-harness-drift-$cli.XXXXXX")"
  if bash "scripts/$recorder" "$fresh"; then
    for pair in $pairs; do
      committed="${pair%%:*}" sub="${pair#*:}"
      "$PI_HARNESS" drift --committed "$committed" --fresh "$fresh/$sub" || ok=0
    done
  else
    echo "drift lane: $cli: scripts/$recorder failed" >&2
    ok=0
  fi
  if [ "$ok" = 1 ]; then
    rm -rf "$fresh"
    echo "drift lane: $cli passed in $(($(date +%s) - start)) s"
  else
    echo "drift lane: $cli FAILED in $(($(date +%s) - start)) s; fresh cassettes kept in $fresh" >&2
    return 1
  fi
}

# Two CLIs' recorders side by side (each CLI's output printed whole when it ends).
if run_jobs 2 drift_one "${clis[@]}"; then
  echo "drift lane: passed (${clis[*]})"
else
  echo "drift lane: FAILED" >&2
  exit 1
fi
