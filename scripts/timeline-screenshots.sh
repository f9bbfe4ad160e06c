#!/usr/bin/env bash
# The README's three timeline screenshots (docs/timeline-tool.png, timeline-cancel-orphans.png,
# timeline-retry.png), taken by the browser check (harness/cli/tests/it/timeline_browser.rs)
# while it checks every page: a tool run with its tool's process selected, a cancel that
# orphans a tool with SIGINT's answer selected, a retry with its retry selected.
#
#   scripts/timeline-screenshots.sh
#
# Needs what the browser check needs (chromium, node, npm ci --prefix harness/cli/tests/browser).
set -euo pipefail
cd "$(dirname "$0")/.."
PI_HARNESS_CHROMIUM=1 PI_HARNESS_TIMELINE_SCREENSHOTS="$PWD/docs" \
  cargo test -p pi-harness --test it timeline_browser -- --nocapture
ls -l docs/timeline-*.png
