#!/usr/bin/env bash
# Test the packages scripts/build-packages.sh built, as a new user installs them: from the
# local files only (no registry for our own packages), with the Rust toolchain off PATH.
#
#   scripts/test-packages.sh [DIST_DIR]      (default: dist)
#
#   1. Python: a fresh virtualenv, `pip install DIST/pi_harness-*.whl pytest pytest-xdist`, then the
#      package's own tests (harness/python/tests) and examples/python (unittest and pytest),
#      each under `pi-harness leftovers --`; the same on one older Python the wheel's tag
#      allows (python3.8 .. 3.10, from PATH or pyenv), when this machine has one
#   2. pip refuses the wheel for another platform, in one line
#   3. Node: a fresh project, `npm install --offline` of the two tarballs, then the helper's
#      tests (harness/npm/tests: node --test, and vitest, fetched from the registry), index.d.ts
#      checked by `tsc --strict` on harness/npm/tests/types/check.ts (typescript: the tests'
#      devDependency, `npm ci` from their package-lock.json) and examples/node, each under
#      `pi-harness leftovers --`
#
# Needs python3 (>= 3.8, with venv) and node (>= 18.17) with npm. Exit status: 0 when all
# passed, 1 when something failed, 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dist="$(cd "${1:-dist}" 2>/dev/null && pwd)" || { echo "test-packages.sh: ${1:-dist}: no such directory (scripts/build-packages.sh builds it)" >&2; exit 2; }
wheel="$(ls "$dist"/pi_harness-*.whl 2>/dev/null | head -1)"
main_tgz="$(ls "$dist"/pi-harness-[0-9]*.tgz 2>/dev/null | head -1)"
bins_tgz="$(ls "$dist"/pi-harness-linux-x64-*.tgz 2>/dev/null | head -1)"
for f in "$wheel" "$main_tgz" "$bins_tgz"; do
  [ -n "$f" ] || { echo "test-packages.sh: $dist lacks the wheel or a tarball (scripts/build-packages.sh)" >&2; exit 2; }
done
export PYTHONDONTWRITEBYTECODE=1 NO_COLOR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 npm_config_fund=false npm_config_audit=false

# The Rust toolchain off PATH: every directory holding cargo or rustc is left out.
clean_path=""
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && clean_path="${clean_path:+$clean_path:}$d"
done
export PATH="$clean_path"
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
  echo "test-packages.sh: cargo or rustc is still on PATH" >&2
  exit 1
fi
echo "test-packages.sh: no cargo, no rustc on PATH; packages from $dist"

work="$(mktemp -d "${TMPDIR:-/tmp}/pi-harness-packages.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failed=()
run() { # name dir cmd...: under `pi-harness leftovers --` (found on PATH, from the package)
  local name="$1" dir="$2" status
  shift 2
  printf '\n--- %s: %s\n' "$name" "$*"
  (cd "$dir" && pi-harness leftovers -- "$@") && status=0 || status=$?
  [ "$status" -eq 0 ] || failed+=("$name (exit $status)")
}

python_lane() { # label python
  local label="$1" py="$2" venv="$work/venv-$1"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q "$wheel" pytest pytest-xdist
  (
    failed=()
    export PATH="$venv/bin:$PATH"
    [ "$(command -v pi-harness)" = "$venv/bin/pi-harness" ] && [ "$(command -v fake-pi)" = "$venv/bin/fake-pi" ]
    cp -R "$root/harness/python/tests" "$work/pytests-$label"
    run "python $label: harness/python/tests" "$work/pytests-$label" python -m pytest -q -p no:cacheprovider
    cp -R "$root/examples/python" "$work/example-python-$label"
    run "python $label: examples/python" "$work/example-python-$label" python -m pytest -q -p no:cacheprovider
    printf '%s\n' "${failed[@]+"${failed[@]}"}" >"$work/failed-$label"
  )
  while IFS= read -r f; do if [ -n "$f" ]; then failed+=("$f"); fi; done <"$work/failed-$label"
}

echo "== Python $(python3 --version 2>&1 | cut -d' ' -f2): pip install $(basename "$wheel") pytest"
python_lane current python3

older=""
current_minor="$(python3 -c 'import sys; print(sys.version_info[1])')"
for minor in 8 9 10; do
  [ "$minor" -lt "$current_minor" ] || continue
  for cand in "$(command -v "python3.$minor" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3."$minor".*/bin/python3."$minor"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import venv, ensurepip' 2>/dev/null; then
      older="$cand"
      break 2
    fi
  done
done
if [ -n "$older" ]; then
  echo "== an older Python the tag allows: $("$older" --version 2>&1) ($older)"
  python_lane "older" "$older"
else
  echo "test-packages.sh: NOTICE: no python3.8 .. 3.$((current_minor - 1)) on this machine: the wheel was installed on $(python3 --version 2>&1) only"
fi

echo "== pip refuses the wheel for another platform, in one line"
refusal="$("$work/venv-current/bin/pip" install --dry-run --target "$work/elsewhere" --platform macosx_11_0_arm64 --only-binary=:all: "$wheel" 2>&1 || true)"
# (pip may say where it looks first, from this machine's pip config: not an error line)
if [ "$(printf '%s\n' "$refusal" | grep -c '^ERROR')" = 1 ] && printf '%s' "$refusal" | grep -q "^ERROR: $(basename "$wheel") is not a supported wheel on this platform.$"; then
  echo "$refusal"
else
  echo "$refusal"
  failed+=("pip on another platform")
fi

echo "== Node $(node --version): npm install --offline $(basename "$main_tgz") $(basename "$bins_tgz")"
proj="$work/node"
mkdir "$proj"
(cd "$proj" && npm init -y >/dev/null && npm install -s --offline "$main_tgz" "$bins_tgz" && npm install -s vitest@3.2.7)
cp -R "$root/harness/npm/tests" "$proj/t"
(cd "$proj/t" && npm ci -s)
(
  failed=()
  export PATH="$proj/node_modules/.bin:$PATH"
  [ "$(command -v pi-harness)" = "$proj/node_modules/.bin/pi-harness" ]
  run "node: harness/npm/tests/node (node --test)" "$proj" node --test t/node/helper.test.js t/node/setup.test.js
  # (types/tsconfig.json: only pi-harness's types, not every @types package the project holds)
  run "node: index.d.ts (tsc --strict on harness/npm/tests/types/check.ts)" "$proj" t/node_modules/.bin/tsc --strict -p t/types
  run "node: harness/npm/tests/vitest (vitest run)" "$proj" npx vitest run --dir t/vitest
  cp "$root"/examples/node/*.js "$proj/"
  run "node: examples/node (node --test)" "$proj" node --test pi_wrapper.test.js claude_bridge.test.js codex_wrapper.test.js
  printf '%s\n' "${failed[@]+"${failed[@]}"}" >"$work/failed-node"
)
while IFS= read -r f; do if [ -n "$f" ]; then failed+=("$f"); fi; done <"$work/failed-node"

if [ ${#failed[@]} -eq 0 ]; then
  echo "test-packages.sh: all passed"
else
  printf 'test-packages.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
