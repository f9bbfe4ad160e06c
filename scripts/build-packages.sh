#!/usr/bin/env bash
# Build what integrators install, from this checkout, into dist/ (or OUT_DIR):
#
#   scripts/build-packages.sh [OUT_DIR]
#
#   dist/pi_harness-VERSION-py3-none-manylinux_2_NN_x86_64.whl   the wheel (maturin): the
#        pi-harness and fake-pi binaries as its scripts, the pi_harness package, its pytest plugin
#   dist/pi-harness-VERSION.tgz                 the npm package: the Node helper (index.js, .d.ts)
#   dist/pi-harness-linux-x64-VERSION.tgz       its optional dependency @pi-harness/linux-x64:
#                                               the two binaries
#
# VERSION is the workspace's (Cargo.toml [workspace.package]); the binaries are built once, with
# the `dist` profile (stripped, fat LTO): maturin finds pi-harness built, and both packages carry
# the same two binaries. The wheel's platform tag is the one its binaries
# need (maturin reads their glibc symbols); auditwheel checks it again here. Needs cargo,
# python3 (>= 3.8, with venv; maturin and auditwheel are installed from PyPI into a build
# venv under target/) and npm. Nothing is published: see README.md for installing the files.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
export CARGO_TERM_COLOR=never

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || { echo "build-packages.sh: no version in Cargo.toml [workspace.package]" >&2; exit 2; }
echo "build-packages.sh: version $version -> $out"

echo "== binaries (cargo build --profile dist)"
cargo build --locked --profile dist -p fake-pi -p pi-harness
# Where cargo put them: CARGO_TARGET_DIR when set (relative to the checkout), else target/.
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
bin="$target/dist"

echo "== wheel (maturin)"
venv="$target/packages/build-venv"
if [ ! -x "$venv/bin/maturin" ] || [ ! -x "$venv/bin/auditwheel" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" "auditwheel>=6,<7"
fi
rm -rf harness/python/build-data
mkdir -p harness/python/build-data/scripts
cp "$bin/fake-pi" harness/python/build-data/scripts/fake-pi
rm -f "$out"/pi_harness-*.whl
(cd harness/python && "$venv/bin/maturin" build --quiet --locked --profile dist --out "$out")
wheel="$(ls "$out"/pi_harness-"$version"-*.whl)"
tag="$(basename "$wheel" .whl | sed 's/.*-py3-none-//')"
# auditwheel reads every ELF file in the wheel (both binaries) and names the tag they allow.
"$venv/bin/auditwheel" show "$wheel" | tee "$target/packages/auditwheel.txt" \
  | tr -s ' \n' ' ' | grep -q "consistent with the following platform tag: \"$tag\"" || {
    echo "build-packages.sh: auditwheel does not confirm the wheel's tag $tag:" >&2
    cat "$target/packages/auditwheel.txt" >&2
    exit 1
  }
echo "wheel: $(basename "$wheel") (auditwheel: consistent with $tag)"
# maturin builds pi-harness with the cargo command above, whose build it finds fresh (the
# workspace-hack gives pi-harness alone the features it had beside fake-pi): the wheel carries
# the very binary the npm package does, linked once.
python3 - "$wheel" "$bin/pi-harness" <<'PY' || { echo "build-packages.sh: the wheel's pi-harness is not $bin/pi-harness (maturin built it again)" >&2; exit 1; }
import hashlib, sys, zipfile
wheel, built = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/pi-harness")]
    sys.exit(len(names) != 1 or hashlib.sha256(z.read(names[0])).digest() != hashlib.sha256(open(built, "rb").read()).digest())
PY

echo "== npm packages (npm pack)"
stage="$target/packages/npm"
rm -rf "$stage"
mkdir -p "$stage/linux-x64/bin"
cp -R harness/npm/pi-harness "$stage/pi-harness"
cp harness/npm/linux-x64/package.json harness/npm/linux-x64/README.md "$stage/linux-x64/"
cp "$bin/fake-pi" "$bin/pi-harness" "$stage/linux-x64/bin/"
(cd "$stage/linux-x64" && npm pkg set "version=$version")
(cd "$stage/pi-harness" && npm pkg set "version=$version" "optionalDependencies.@pi-harness/linux-x64=$version")
rm -f "$out"/pi-harness-*.tgz
for p in linux-x64 pi-harness; do
  (cd "$stage/$p" && npm pack --silent --pack-destination "$out" >/dev/null)
done

echo "== built"
for f in "$wheel" "$out/pi-harness-$version.tgz" "$out/pi-harness-linux-x64-$version.tgz"; do
  [ -f "$f" ] || { echo "build-packages.sh: $f was not built" >&2; exit 1; }
  printf '%8s KiB  %s\n' "$(( $(stat -c %s "$f") / 1024 ))" "$(basename "$f")"
done
printf '%8s KiB  %s\n' "$(( $(stat -c %s "$bin/pi-harness") / 1024 ))" "pi-harness binary (dist profile)"
printf '%8s KiB  %s\n' "$(( $(stat -c %s "$bin/fake-pi") / 1024 ))" "fake-pi binary (dist profile)"
