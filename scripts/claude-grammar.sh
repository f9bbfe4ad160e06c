#!/usr/bin/env bash
# Regenerate the data of pi-grammar's Claude Code module from an installed CLI: what the CLI's
# own `--version` and `--help` print and every option its parser accepts, into
# harness/grammar/data/claude/VERSION/ (version.txt, help.txt, grammar.tsv; the format is in
# harness/grammar/data/claude/README.md). A new release is a data change: run this on it, commit.
# Usage: scripts/claude-grammar.sh [CLAUDE_BIN] [--out DIR]
#   CLAUDE_BIN: default scripts/install-claude.sh's binary; --out DIR: write DIR/VERSION/ instead
#   of harness/grammar/data/claude/VERSION/ (a test compares it with the committed data).
#
# Everything is measured by running the CLI offline (HOME a temp dir, no environment but PATH):
# - the options the help lists, with their flags, choices and aliases;
# - hidden options: every flag spec the binary's strings pass to commander (`.option("...")`,
#   `new X("--...")`), kept when the parser knows it;
# - values: for each option taking one, `--opt=bogus` tells choices (commander lists them) or a
#   validator (its message, and which of a few number-like samples it takes); for options with
#   choices, whether any case goes, and each other word of the binary's string arrays that are
#   mostly choices is tried, and kept when the parser takes it.
# The probe: commander reports the FIRST unknown option after parsing everything else, so
# `claude ARGS --pi-harness-probe-a` fails with `error: unknown option '--pi-harness-probe-a'`
# exactly when the parser took ARGS (and nothing runs); anything else is its verdict on ARGS.
# (`ARGS --version` is no use for this: commander prints the version while it parses, before it
# reports unknown options.) About 300 probes, a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_OUT=harness/grammar/data/claude
if [ "${1:-}" = --out ]; then set -- "" "$@"; fi
if [ "${2:-}" = --out ]; then
  [ -n "${3:-}" ] || { echo "claude-grammar.sh: --out needs a directory" >&2; exit 2; }
  DATA_OUT=$3
fi
BIN=${1:-}
[ -n "$BIN" ] || BIN=$(scripts/install-claude.sh)
[ -x "$BIN" ] || { echo "claude-grammar.sh: $BIN is not executable" >&2; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
work=$(mktemp -d "${TMPDIR:-/tmp}/claude-grammar.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/home"
PA=--pi-harness-probe-a
PB=--pi-harness-probe-b

# probe ARGS...: run the CLI; sets RC, OUT (stdout), ERR (stderr).
probe() {
  set +e
  (cd "$work/home" && env -i PATH=/usr/bin:/bin HOME="$work/home" TERM=dumb \
    timeout -k 2 30 "$BIN" "$@" </dev/null >"$work/out" 2>"$work/err")
  RC=$?
  set -e
  OUT=$(cat "$work/out")
  ERR=$(cat "$work/err")
}
# took ARGS...: did the parser accept ARGS (the probe's unknown option is the only complaint)?
# (A warning before it, like `--effort`'s for a value it ignores, is still a yes.)
took() {
  probe "$@" "$PA"
  [ "$RC" = 1 ] && [ -z "$OUT" ] && [ "$(tail -n 1 <<<"$ERR")" = "error: unknown option '$PA'" ]
}

probe --version
VERSION_LINE=$OUT
VERSION=${VERSION_LINE%% *}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "claude-grammar.sh: odd --version: $VERSION_LINE" >&2; exit 1; }
DEST=$DATA_OUT/$VERSION
mkdir -p "$DEST"
printf '%s\n' "$VERSION_LINE" >"$DEST/version.txt"
(cd "$work/home" && env -i PATH=/usr/bin:/bin HOME="$work/home" TERM=dumb "$BIN" --help </dev/null >"$work/help")
cp "$work/help" "$DEST/help.txt"

# The help's options: "FLAGS<TAB>CHOICES" (choices comma-separated, from `(choices: "a", "b"`).
awk '
  /^Options:/ { inopt = 1; next }
  /^[A-Z][a-z]*:/ { inopt = 0 }
  function flush() { if (flags != "") print flags "\t" choices(desc); flags = ""; desc = "" }
  function choices(d,   m, out, s) {
    if (!match(d, /\(choices: ("[^"]*"(, )?)+/)) return "-"
    s = substr(d, RSTART + 10, RLENGTH - 10); out = ""
    while (match(s, /"[^"]*"/)) { out = out (out == "" ? "" : ",") substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
    return out
  }
  inopt && /^  -/ {
    flush()
    line = substr($0, 3)
    if (match(line, /  +/)) { flags = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH) }
    else { flags = line; desc = "" }
    next
  }
  inopt && /^   / { sub(/^ +/, ""); desc = desc " " $0; next }
  END { flush() }
' "$work/help" >"$work/help-options"

# Flag specs the binary hands to commander (hidden options among them).
strings -n 6 "$BIN" >"$work/strings"
grep -o '\(\.option\|\.requiredOption\|new [A-Za-z_$][A-Za-z0-9_$]*\)("\(-[a-zA-Z], \)\?--[a-zA-Z][^"]*"' "$work/strings" \
  | sed 's/^[^"]*"//; s/"$//' | grep '^\(-[a-zA-Z], \)\?--[a-zA-Z][a-zA-Z0-9-]*\(, --[a-zA-Z][a-zA-Z0-9-]*\)\?\( [<[][^]>]*[]>]\)\?$' \
  | sort -u >"$work/specs" || true
# String arrays (for hidden choice values): one per line, elements comma-separated.
grep -o '\["[A-Za-z0-9_-]*"\(,"[A-Za-z0-9_-]*"\)\+\]' "$work/strings" | tr -d '[]"' | sort -u >"$work/arrays" || true

longs_of() { grep -o -- '--[a-zA-Z][a-zA-Z0-9-]*' <<<"$1" || true; }
short_of() { sed -n 's/^\(-[a-zA-Z]\), .*/\1/p' <<<"$1"; }
arity_of() {
  case "$1" in
    *'...>') echo variadic ;; *'>') echo value ;; *'...]') echo optional-variadic ;; *']') echo optional ;; *) echo switch ;;
  esac
}

# classify FLAG: known? with what kind? Sets KIND (unknown|switch|help|version|required|optional)
# and FLAGS (commander's flags string when the CLI printed it).
classify() {
  local l=$1
  FLAGS=
  KIND=
  probe "$l" "$PA" "$PB"
  if [ "$RC" = 0 ] && [ "$OUT" = "$VERSION_LINE" ]; then KIND=version; return; fi
  if [ "$RC" = 0 ] && [ "$OUT" = "$(cat "$work/help")" ]; then KIND=help; return; fi
  case "$ERR" in
    "error: unknown option '$l'"*) KIND=unknown; return ;;
    "error: unknown option '$PA'") ;;
    *)
      # PA was taken as the value, or some check of the CLI's own failed while it parsed
      # (such a check fails again without PA, so nothing runs).
      probe "$l"
      FLAGS=$(sed -n "s/^error: option '\(.*\)' argument missing$/\1/p" <<<"$ERR")
      if [ -n "$FLAGS" ]; then KIND=required; return; fi ;;
  esac
  probe "$l=pi-harness-bogus" "$PA"
  case "$ERR" in
    "error: unknown option '$l=pi-harness-bogus'"*) KIND=switch ;;
    *) KIND=optional
       FLAGS=$(sed -n "s/^error: option '\(.*\)' argument 'pi-harness-bogus' is invalid\..*/\1/p" <<<"$ERR" | head -1) ;;
  esac
}

# Number-like samples and which of them each validator takes (JavaScript's Number()).
SAMPLES=(0 1 3 -1 1.5 1e3 0x10 '' ' 3' 3x abc)
declare -A RULE_OF=(
  [yyyyyyyyynn]=number
  [nyynyyynynn]=positive
  [nyynnyynynn]=positive-integer
)

# values FLAGS LONG KIND HELPCHOICES: prints "CHOICES<TAB>ACCEPTS<TAB>CHECK".
values() {
  local flags=$1 l=$2 kind=$3 help_choices=$4 msg choices=- accepts=- check=- v pattern= w
  if [ "$kind" = switch ] || [ "$kind" = help ] || [ "$kind" = version ]; then printf -- '-\t-\t-\n'; return; fi
  if took "$l=pi-harness-bogus"; then printf -- '-\t-\t-\n'; return; fi
  msg=$(sed -n "s/^error: option '.*' argument 'pi-harness-bogus' is invalid\. \(.*\)$/\1/p" <<<"$ERR" | head -1)
  if [[ $msg == "Allowed choices are "*. ]]; then
    choices=${msg#Allowed choices are }
    choices=${choices%.}
    choices=${choices//, /,}
    if [ "$help_choices" != - ] && [ "$help_choices" != "$choices" ]; then
      echo "claude-grammar.sh: $l: the help lists choices $help_choices, the parser $choices" >&2
    fi
    # Any case? (`--prompt-suggestions On` is `on`.)
    local first=${choices%%,*}
    if [ "${first^^}" != "$first" ] && took "$l=${first^^}" && took "$l=${first^}"; then
      check=any-case
    fi
    # Hidden values: the other words of the binary's string arrays that are mostly choices
    # (two of them at least, and half the array).
    while IFS= read -r w; do
      if took "$l=$w"; then accepts=$([ "$accepts" = - ] && echo "$w" || echo "$accepts,$w"); fi
    done < <(awk -F, -v choices="$choices" -v anycase="$check" '
      function key(w) { return anycase == "any-case" ? tolower(w) : w }
      BEGIN { n = split(choices, c, ","); for (i = 1; i <= n; i++) is[key(c[i])] = 1 }
      { hits = 0; for (i = 1; i <= NF; i++) if (key($i) in is) hits++
        if (hits >= 2 && hits * 2 >= NF)
          for (i = 1; i <= NF; i++) if (!(key($i) in is) && $i != "" && !(key($i) in seen)) { seen[key($i)] = 1; print $i } }
    ' "$work/arrays")
  elif [ -n "$msg" ]; then
    for v in "${SAMPLES[@]}"; do
      if took "$l=$v"; then pattern+=y; else pattern+=n; fi
    done
    check=${RULE_OF[$pattern]:-custom}
    [ "$check" = custom ] || check="$check:$msg"
  else
    # Refused outside commander's messages (a parse-time check of the CLI's own).
    check=custom
  fi
  printf '%s\t%s\t%s\n' "$choices" "$accepts" "$check"
}

# Every long flag to try: the help's first, then the specs'.
: >"$work/rows"
declare -A DONE=()
try_option() {
  local spec=$1 shown=$2 help_choices=$3 l kind flags c a
  for l in $(longs_of "$spec"); do
    [ -n "${DONE[$l]+x}" ] && return
  done
  l=$(longs_of "$spec" | head -1)
  classify "$l"
  [ "$KIND" = unknown ] && return
  flags=${FLAGS:-$spec}
  if [ "$KIND" = optional ] && [[ $(arity_of "$flags") != optional* ]]; then
    # The spec seen first was another command's: take one of this arity.
    flags=$(grep -- "^\(-[a-zA-Z], \)\?$l\( \|, \)" "$work/specs" | grep '\]$' | head -1 || true)
    [ -n "$flags" ] || flags="$l [value]"
  fi
  case "$KIND" in
    required) kind=$(arity_of "$flags") ;;
    optional) kind=$(arity_of "$flags"); [[ $kind == optional* ]] || kind=optional ;;
    switch) kind=switch; [ "$(arity_of "$flags")" = switch ] || flags=$(sed 's/ [<[].*//' <<<"$flags") ;;
    *) kind=$KIND ;;
  esac
  # Aliases and the short flag: the parser must take each (a warning otherwise).
  for a in $(longs_of "$flags") $(short_of "$flags"); do
    DONE[$a]=1
    [ "$a" = "$l" ] && continue
    case "$kind" in
      help|version) continue ;;
      switch|optional*) probe "$a" "$PA" ;;
      *) probe "$a" ;;
    esac
    [[ $ERR == "error: unknown option '$a'"* ]] || continue
    echo "claude-grammar.sh: warning: the parser does not take $a of $flags" >&2
  done
  c=$(values "$flags" "$l" "$kind" "$help_choices")
  printf '%s\t%s\t%s\t%s\t%s\n' "${l#--}" "$flags" "$kind" "$shown" "$c" >>"$work/rows"
  echo "claude-grammar.sh: $flags ($kind, $shown)" >&2
}
while IFS=$'\t' read -r flags help_choices; do
  try_option "$flags" help "$help_choices"
done <"$work/help-options"
while IFS= read -r spec; do
  try_option "$spec" hidden -
done <"$work/specs"

{
  echo "# Claude Code $VERSION's command line as its parser reads it: one option a line, written by"
  echo "# scripts/claude-grammar.sh from the CLI itself (do not edit; the format: README.md beside)."
  printf '# flags\tkind\tshown\tchoices\taccepts\tcheck\n'
  LC_ALL=C sort -t$'\t' -k1,1 "$work/rows" | cut -f2-
} >"$DEST/grammar.tsv"
echo "claude-grammar.sh: wrote $DEST ($(grep -vc '^#' "$DEST/grammar.tsv") options)" >&2
