#!/usr/bin/env bash
# Re-record the whole corpus from real pi: installs every pinned version (scripts/install-pi.sh),
# then records every scenario of cassettes/scripts/corpus.json on each (0.73.1, 0.87.1, 1.5.2),
# and the RPC sessions of cassettes/scripts/rpc-corpus.json on each it applies to (0.87.1, 1.5.2).
#
#   scripts/record-corpus.sh [OUT_DIR] [record-corpus options, e.g. --only tool_bash]
#
# OUT_DIR defaults to cassettes/recorded (the committed corpus), the RPC sessions then go to
# cassettes/rpc; with an OUT_DIR they go to OUT_DIR/rpc. With --only, a scenario of either
# manifest is recorded (the other manifest records nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
# OUT_DIR is optional: an option in its place (`--only x`) leaves the default.
out=cassettes/recorded
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out="$1"; shift; fi
paths=()
while IFS= read -r line; do paths+=("$line"); done < <(bash scripts/install-pi.sh)
[ "${#paths[@]}" -ge 1 ] || { echo "record-corpus.sh: install-pi.sh printed no pi path" >&2; exit 1; }
pi_flags=()
for p in "${paths[@]}"; do pi_flags+=(--pi "$p"); done
cargo build -q -p pi-harness
if [ "$out" = cassettes/recorded ]; then rpc_out=cassettes/rpc; else rpc_out="$out/rpc"; fi
# --only names scenarios of one manifest: each run checks them against its own.
only=() rest=()
while [ $# -gt 0 ]; do
  if [ "$1" = --only ] && [ $# -ge 2 ]; then only+=("$2"); shift 2; else rest+=("$1"); shift; fi
done
for m in corpus rpc-corpus; do
  manifest="cassettes/scripts/$m.json"
  dest="$out"; [ "$m" = rpc-corpus ] && dest="$rpc_out"
  sel=()
  for o in "${only[@]+"${only[@]}"}"; do
    grep -q "\"name\": \"$o\"" "$manifest" && sel+=(--only "$o")
  done
  if [ "${#only[@]}" -gt 0 ] && [ "${#sel[@]}" -eq 0 ]; then continue; fi
  cargo run -q -p pi-harness -- record-corpus \
    --manifest "$manifest" "${pi_flags[@]}" --out "$dest" "${sel[@]+"${sel[@]}"}" "${rest[@]+"${rest[@]}"}"
done
