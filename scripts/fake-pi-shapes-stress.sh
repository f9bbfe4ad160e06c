#!/usr/bin/env bash
# fake-pi's process shapes (pi, Claude Code, the Codex wrapper and child, the Gemini CLI
# relaunch parent and child) run RUNS_PER_SHAPE times each on a loaded machine, stdin a pipe
# and hints on; prints the hangs per shape (issue 42: the Codex wrapper hung 10 times in
# 2,400 runs). Exit 1 when any run hung or ended otherwise than its recording.
#
#   scripts/fake-pi-shapes-stress.sh              # 25 runs per shape: a few seconds (CI)
#   scripts/fake-pi-shapes-stress.sh 2400         # the issue's figure
#   scripts/fake-pi-shapes-stress.sh 600 --load 4 --jobs 3
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p fake-pi --bins --example shapes_stress
target="$(realpath "${CARGO_TARGET_DIR:-target}")"
PI_TESTKIT_FAKE_PI="$target/debug/fake-pi" exec "$target/debug/examples/shapes_stress" "$@"
