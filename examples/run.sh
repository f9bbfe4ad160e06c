#!/usr/bin/env bash
# Run the Rust example's tests against installed binaries.
#
#   examples/run.sh BIN_DIR
#
# BIN_DIR holds `fake-pi` and `pi-harness` (e.g. ~/.cargo/bin after `cargo install`, or a copy of
# target/debug). It goes first on PATH; the tests run as `pi-harness leftovers -- cargo test` in
# examples/rust, so a test run that leaves a process behind fails. They take their cassettes
# from `pi-harness corpus export` into temp dirs: nothing here reads the rest of the repository.
#
# The Python and Node examples use the pi-harness wheel and npm packages instead of binaries on
# PATH: scripts/test-packages.sh runs them against the packages scripts/build-packages.sh built.
# Exit status: 0 when the tests passed, 1 when they failed, 2 for a usage error.
set -uo pipefail

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin_dir="$(cd "$1" 2>/dev/null && pwd)" || { echo "run.sh: $1: not a directory" >&2; exit 2; }
for b in fake-pi pi-harness; do
  [ -x "$bin_dir/$b" ] || { echo "run.sh: $bin_dir/$b: missing or not executable" >&2; exit 2; }
done
command -v cargo >/dev/null || { echo "run.sh: cargo not found: examples/rust cannot run" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$bin_dir:$PATH"

echo "run.sh: fake-pi and pi-harness from $bin_dir ($(pi-harness --version))"
printf '\n=== examples/rust: cargo test --locked\n'
start=$(date +%s)
(cd "$here/rust" && pi-harness leftovers -- cargo test --locked)
status=$?
printf '=== examples/rust: exit %s after %ss\n' "$status" "$(($(date +%s) - start))"
[ "$status" -eq 0 ]
