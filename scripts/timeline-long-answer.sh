#!/usr/bin/env bash
# The long run as a page: how big the page of cassettes/recorded/long_answer.pi73 (21.8 MB
# decompressed, 2001 text deltas) is, and how long headless Chromium takes to load and draw
# it (the median of RUNS loads in one browser, a fresh navigation each). A figure, not a test:
#
#   scripts/timeline-long-answer.sh [RUNS]
#
# Needs chromium (PI_HARNESS_CHROMIUM_BIN, default /usr/bin/chromium), node and the browser
# check's packages (npm ci --prefix harness/cli/tests/browser). The goal (issue 48): a page
# under 5 MB that loads in under 3 s.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
cargo build -q -p pi-harness
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cassette=cassettes/recorded/long_answer.pi73.cassette.jsonl.zst
page="$tmp/long_answer.html"
start=$(date +%s.%N)
target/debug/pi-harness cassette show "$cassette" --html "$page" >/dev/null
end=$(date +%s.%N)
size=$(stat -c %s "$page")
input=$(zstd -dc "$cassette" | wc -c)
printf 'long_answer.pi73: %d bytes of cassette -> a page of %d bytes (%.2f MB), rendered in %.2f s (debug build)\n' \
  "$input" "$size" "$(echo "$size / 1000000" | bc -l)" "$(echo "$end - $start" | bc -l)"
node harness/cli/tests/browser/check.mjs --time "$page" "$runs"
