#!/usr/bin/env bash
# Re-record the whole corpus from real pi: installs every pinned version (scripts/install-pi.sh),
# then records every scenario of cassettes/scripts/corpus.json on each (0.73.1, 0.87.1, 1.5.2),
# and the RPC sessions of cassettes/scripts/rpc-corpus.json on each it applies to (0.87.1, 1.5.2).
#
#   scripts/record-corpus.sh [OUT_DIR] [record-corpus options, e.g. --only tool_bash]
#
# OUT_DIR defaults to cassettes/recorded (the committed corpus), the RPC sessions then go to
# cassettes/rpc; with an OUT_DIR they go to OUT_DIR/rpc. With --only, a scenario of either
# manifest is recorded (the other manifest records nothing). Uses the pi-harness binary
# PI_HARNESS names (default: built here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh
# OUT_DIR is optional: an option in its place (`--only x`) leaves the default.
out=cassettes/recorded
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out="$1"; shift; fi
paths=()
while IFS= read -r line; do paths+=("$line"); done < <(bash scripts/install-pi.sh)
[ "${#paths[@]}" -ge 1 ] || { echo "record-corpus.sh: install-pi.sh printed no pi path" >&2; exit 1; }
if [ -z "${PI_HARNESS:-}" ]; then
  cargo build -q --locked -p pi-harness
  PI_HARNESS=${CARGO_TARGET_DIR:-target}/debug/pi-harness
fi
if [ "$out" = cassettes/recorded ]; then rpc_out=cassettes/rpc; else rpc_out="$out/rpc"; fi
# --only names scenarios of one manifest: each run checks them against its own.
only=() rest=()
while [ $# -gt 0 ]; do
  if [ "$1" = --only ] && [ $# -ge 2 ]; then only+=("$2"); shift 2; else rest+=("$1"); shift; fi
done
# One record-corpus run per manifest and pi version: PI_HARNESS_RECORD_JOBS=N runs N at a time
# (default 1: one after another, as one run of all versions would).
record_one() { # MANIFEST/PI
  local m="${1%%/*}" pi="${1#*/}" dest="$out" sel=() o
  local manifest="cassettes/scripts/$m.json"
  [ "$m" = rpc-corpus ] && dest="$rpc_out"
  for o in "${only[@]+"${only[@]}"}"; do
    grep -q "\"name\": \"$o\"" "$manifest" && sel+=(--only "$o")
  done
  if [ "${#only[@]}" -gt 0 ] && [ "${#sel[@]}" -eq 0 ]; then return 0; fi
  "$PI_HARNESS" record-corpus \
    --manifest "$manifest" --pi "$pi" --out "$dest" "${sel[@]+"${sel[@]}"}" "${rest[@]+"${rest[@]}"}"
}
jobs=()
for m in corpus rpc-corpus; do
  for p in "${paths[@]}"; do jobs+=("$m/$p"); done
done
run_jobs "${PI_HARNESS_RECORD_JOBS:-1}" record_one "${jobs[@]}"
