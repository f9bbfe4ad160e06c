#!/usr/bin/env bash
# pi's command line as a pi package defines it: reads the package's own argument parser
# (dist/cli/args.js: every `arg === "--flag"` branch of parseArgs, how it takes its value, the
# thinking levels, whether `--` ends the options) and prints it as pi-grammar's data
# (harness/grammar/data/pi/VERSION/grammar.tsv; the format: harness/grammar/data/pi/README.md).
#
#   scripts/pi-grammar.sh PI [--write]
#
# PI is a pi executable (scripts/install-pi.sh prints them) or a pi package directory. Without
# --write the data goes to stdout (a test compares it with the committed file of every pinned
# version); with --write it is written to harness/grammar/data/pi/VERSION/grammar.tsv and, for a
# version with no committed data yet, the change it implies against the newest pinned version
# is printed: the rows to add to harness/grammar/src/flags.rs and version.rs (see
# docs/pinning.md). Needs node (any version: the parser file is read as text, never run).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/pi-grammar.sh PI [--write]" >&2; exit 2; }
pi=$1
write=${2:-}
# The package root: PI itself, or the directory above PI's real path that has pi's package.json.
if [ -d "$pi" ]; then
  root=$pi
else
  [ -e "$pi" ] || { echo "pi-grammar.sh: $pi does not exist" >&2; exit 2; }
  dir=$(dirname "$(readlink -f "$pi")")
  root=
  while [ "$dir" != / ]; do
    if [ -f "$dir/package.json" ] && grep -q '"name": *"[^"]*pi-coding-agent"' "$dir/package.json"; then
      root=$dir
      break
    fi
    dir=$(dirname "$dir")
  done
  [ -n "$root" ] || { echo "pi-grammar.sh: no pi package.json above $pi" >&2; exit 2; }
fi
args_js=$root/dist/cli/args.js
[ -f "$args_js" ] || { echo "pi-grammar.sh: $args_js: no such file (is $root a pi package?)" >&2; exit 2; }

data=$(node - "$root/package.json" "$args_js" <<'EOF'
const fs = require("fs");
const [pkgPath, argsPath] = process.argv.slice(2);
const version = JSON.parse(fs.readFileSync(pkgPath, "utf8")).version;
const src = fs.readFileSync(argsPath, "utf8");
const fail = (m) => { process.stderr.write(`pi-grammar.sh: ${argsPath}: ${m}\n`); process.exit(1); };
const start = src.indexOf("function parseArgs(");
if (start < 0) fail("no parseArgs function");
// parseArgs' body: up to the next top-level function.
const rest = src.slice(start + 1);
const end = rest.search(/\n(export )?function /);
const body = end < 0 ? rest : rest.slice(0, end);
// Each branch of the big if/else chain that names a flag: its condition and its code up to the
// next branch.
const branch = /(?:if|else if) \((\(?arg === "[^"]+"[^{]*)\) \{/g;
const starts = [];
for (let m; (m = branch.exec(body)); ) starts.push({ at: m.index, cond: m[1], open: m.index + m[0].length });
const rows = [];
let doubleDash = false;
starts.forEach((b, i) => {
  const code = body.slice(b.open, i + 1 < starts.length ? starts[i + 1].at : body.length);
  const names = [...b.cond.matchAll(/arg === "([^"]+)"/g)].map((m) => m[1]);
  if (names.includes("--")) { doubleDash = true; return; }
  const long = names.find((n) => n.startsWith("--"));
  const short = names.find((n) => !n.startsWith("--")) || "-";
  if (!long) fail(`a branch without a long flag: ${b.cond}`);
  let kind;
  if (/i \+ 1 < args\.length/.test(b.cond)) {
    // The value is taken when there is a next argument, whatever it is.
    kind = /\.push\(args\[\+\+i\]\)/.test(code) ? "repeated" : "value";
  } else if (/!args\[i \+ 1\]\.startsWith\("-"\)/.test(code)) {
    // The next argument, unless it looks like a flag (`--list-models`).
    kind = "optional";
  } else if (/args\[\+\+i\]/.test(code) || /=== undefined \|\| \w+\.startsWith\("-"\)/.test(code)) {
    // A value the branch checks itself (`--name`; `--mode`, `--use-theme`, `--tui-mode`).
    kind = "value";
  } else {
    kind = "switch";
  }
  rows.push([long, short, kind].join("\t"));
});
if (rows.length === 0) fail("no flag branches found");
const levels = src.match(/VALID_THINKING_LEVELS = \[([^\]]*)\]/);
if (!levels) fail("no VALID_THINKING_LEVELS");
const thinking = [...levels[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]).join(",");
rows.sort();
const out = [
  `# pi ${version}'s command line as its parser (dist/cli/args.js) reads it: written by`,
  "# scripts/pi-grammar.sh from the package (do not edit; the format: README.md beside).",
  "# flag\tshort\tkind",
  ...rows,
  `# thinking levels: ${thinking}`,
  `# -- ends the options: ${doubleDash ? "yes" : "no"}`,
];
process.stdout.write(out.join("\n") + "\n");
EOF
)
version=$(node -e 'process.stdout.write(String(require(process.argv[1]).version))' "$root/package.json")
if [ "$write" != --write ]; then
  printf '%s\n' "$data"
  exit 0
fi
dest=harness/grammar/data/pi/$version
new=yes
[ -d "$dest" ] && new=no
mkdir -p "$dest"
printf '%s\n' "$data" >"$dest/grammar.tsv"
echo "pi-grammar.sh: wrote $dest/grammar.tsv" >&2
[ "$new" = yes ] || exit 0
# The change against the newest pinned version's data.
pinned=$(ls harness/grammar/data/pi | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | grep -vx "$version" | sort -V | tail -1)
[ -n "$pinned" ] || exit 0
old=harness/grammar/data/pi/$pinned/grammar.tsv
echo "pi-grammar.sh: pi $version against the newest pinned $pinned:"
rows() { grep -v '^#' "$1" | sort; }
changed=no
while IFS=$'\t' read -r long short kind; do
  changed=yes
  s=None; [ "$short" = - ] || s="Some(\"$short\")"
  k=$(case $kind in switch) echo Switch;; value) echo Value;; repeated) echo Repeated;; optional) echo OptionalValue;; esac)
  echo "  new flag $long ($kind): add to FLAGS in harness/grammar/src/flags.rs:"
  echo "    flag(\"$long\", $s, $k, Version::new(${version//./, })),"
done < <(comm -13 <(rows "$old") <(rows "$dest/grammar.tsv"))
while IFS=$'\t' read -r long short kind; do
  changed=yes
  echo "  gone or changed: $long $short $kind (a flag pi $version no longer reads this way: flags.rs has no removal yet; see docs/pinning.md)"
done < <(comm -23 <(rows "$old") <(rows "$dest/grammar.tsv"))
for line in "thinking levels" "-- ends the options"; do
  a=$(grep "^# $line: " "$old" || true)
  b=$(grep "^# $line: " "$dest/grammar.tsv" || true)
  if [ "$a" != "$b" ]; then
    changed=yes
    echo "  ${b#\# } (was: ${a#\# }): update THINKING_LEVELS or FEATURES in harness/grammar/src/version.rs"
  fi
done
[ "$changed" = yes ] || echo "  no change to the command line: add $version to pi's row in harness/grammar/src/agents/pi.rs"
