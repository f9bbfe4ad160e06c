# What .ci/run's sections share (sourced by it): every step is timed into the table printed at
# the end of the run, also when a step fails (then the run exits non-zero); jobs run side by side
# a few at a time; the lanes run the test binaries `cargo test` built; and every compile is
# logged (.ci/rustc-log), so the table says how many dependencies each step compiled.
#
#   ci_step NAME CMD...     run CMD (a command or a function), time it, add a row; stop the run
#                           when it fails
#   ci_start [--nice] NAME CMD...   run CMD as a job beside what follows (--nice: at the lowest
#                           CPU priority), its output in its own log (printed whole when it
#                           ends), its steps in its own rows; ci_wait [NAME...] waits for jobs
#   ci_jobs N FUNC ARG...   run `FUNC ARG` for each ARG as jobs, at most N at a time
#   ci_it CRATE FILTER      CRATE's integration test binary (`tests/it`), as `cargo test -p CRATE
#                           --test it FILTER -- --nocapture` runs it, without a build
#   ci_table                the table (the run's EXIT trap)

ci_out="$PWD/target/ci"
rm -rf "$ci_out"
mkdir -p "$ci_out/rows" "$ci_out/logs" "$ci_out/rustc" "$ci_out/cpu"
ci_t0=$EPOCHREALTIME
# The rows file the steps of this shell write to; files sort in the order the steps ran: the
# main shell's steps before a group of jobs in 010-main, the jobs in 020-01-NAME, ..., the
# steps after them in 030-main.
ci_group=10
ci_job=010-main
ci_nstep=0

export RUSTC_WRAPPER="$PWD/.ci/rustc-log"
# wait_any
source scripts/jobs.sh

ci_secs() { # START -> seconds since START, one decimal
  awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# One row: job<TAB>step<TAB>seconds<TAB>result<TAB>rustc log. Rows are appended to the job's own
# file (a job's steps run one after another), so jobs running side by side never share one.
ci_row() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ci_out/rows/$ci_job"
}

ci_step() {
  local name="$1" start status log
  shift
  ci_nstep=$((ci_nstep + 1))
  log="$ci_out/rustc/$ci_job.$ci_nstep"
  : >"$log"
  printf '\n=== %s (%s)\n' "$name" "$(date -u +%H:%M:%S)"
  start=$EPOCHREALTIME
  # A process of its own, so that `set -e` holds inside CMD (it would not in `CMD || ...`).
  (
    # An asynchronous list of a shell without job control starts with SIGINT and SIGQUIT
    # ignored (POSIX), and what it runs inherits that: the tests that send SIGINT need them back.
    trap - INT QUIT
    set -euo pipefail
    export PI_CI_RUSTC_LOG="$log"
    # The CPU seconds of what the step ran (children's user + system time, once reaped).
    # (`times` itself, not in a pipe: a subshell of its own would have no children.)
    trap 'times >"${log/rustc/cpu}"' EXIT
    "$@"
  ) &
  wait $! && status=0 || status=$?
  if [ "$status" -eq 0 ]; then
    ci_row "$name" "$(ci_secs "$start")" ok "$log"
  else
    ci_row "$name" "$(ci_secs "$start")" "FAILED (exit $status)" "$log"
    printf '=== %s: FAILED (exit %s)\n' "$name" "$status" >&2
    exit 1
  fi
}

ci_cpu() { # `times`' line "0m1.5s 0m0.2s" -> 1.7 (nothing read: -)
  awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%.1f", t; n++ }
       END { if (!n) printf "-" }'
}

# A row for what was decided rather than run (a gated check skipped), with no time of its own.
ci_note() {
  ci_row "$1" 0.0 "$2" /dev/null
}

# Jobs: a job is a command (a function running ci_steps) in a process of its own, its output in
# its own log, its steps in its own rows file. ci_start starts one; ci_wait waits for some.
declare -A ci_name_of=() ci_start_of=()
ci_njob=0
ci_failed=()

ci_start() { # [--nice] NAME CMD...: start CMD as the job NAME
  local nice=0
  if [ "$1" = --nice ]; then nice=1; shift; fi
  local name="$1"
  shift
  ci_njob=$((ci_njob + 1))
  printf '\n=== job %s: started (%s)%s\n' "$name" "$(date -u +%H:%M:%S)" \
    "$([ "$nice" = 1 ] && echo ", at the lowest CPU priority: it takes what the others leave")"
  (
    trap - INT QUIT # as in ci_step: a background job's commands would ignore them
    # Below everything else: what runs beside it gets the CPU first.
    if [ "$nice" = 1 ]; then renice -n 19 -p "$BASHPID" >/dev/null; fi
    ci_job="$(printf '%03d-%02d' "$((ci_group + 10))" "$ci_njob")-$name"
    ci_nstep=0
    : >"$ci_out/rows/$ci_job"
    "$@"
  ) >"$ci_out/logs/$name" 2>&1 </dev/null &
  ci_name_of[$!]="$name"
  ci_start_of[$!]=$EPOCHREALTIME
}

ci_wait_one() { # PID...: wait for one of these jobs to end, print its log
  local pid status name
  wait_any "$@"
  pid=$REAPED status=$REAPED_STATUS
  [ -n "$pid" ] || return 0
  name="${ci_name_of[$pid]}"
  printf '\n=== job %s: %s after %s s; its log:\n' "$name" \
    "$([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)")" "$(ci_secs "${ci_start_of[$pid]}")"
  sed 's/^/  | /' "$ci_out/logs/$name"
  [ "$status" -eq 0 ] || ci_failed+=("$name")
  unset "ci_name_of[$pid]" "ci_start_of[$pid]"
}

ci_wait() { # [NAME...]: wait for these jobs (all when none is named); stop the run when one failed
  local pid want=() name
  for pid in "${!ci_name_of[@]}"; do
    if [ $# -eq 0 ]; then want+=("$pid"); continue; fi
    for name in "$@"; do [ "${ci_name_of[$pid]}" = "$name" ] && want+=("$pid"); done
  done
  while [ ${#want[@]} -gt 0 ]; do
    ci_wait_one "${want[@]}"
    local left=()
    for pid in "${want[@]}"; do [ -n "${ci_name_of[$pid]:-}" ] && left+=("$pid"); done
    want=("${left[@]+"${left[@]}"}")
  done
  ci_stop_if_failed
}

ci_kill_jobs() { # the jobs still running, and everything they started (a failed run's leftovers)
  local pid
  for pid in "${!ci_name_of[@]}"; do ci_kill_tree "$pid"; done
}

ci_kill_tree() { # PID: its children first (each stopped before it can start another), then it
  local child
  kill -STOP "$1" 2>/dev/null || return 0
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do ci_kill_tree "$child"; done
  kill -KILL "$1" 2>/dev/null || true
}

ci_stop_if_failed() {
  if [ ${#ci_failed[@]} -gt 0 ]; then
    printf '=== FAILED: %s\n' "${ci_failed[*]}" >&2
    exit 1
  fi
}

ci_jobs() { # MAX FUNC ARG...: `FUNC ARG` for each ARG as a job, at most MAX at a time
  local max="$1" func="$2" arg pid mine=()
  shift 2
  for arg in "$@"; do
    while [ ${#mine[@]} -ge "$max" ]; do
      ci_wait_one "${mine[@]}"
      local left=()
      for pid in "${mine[@]}"; do [ -n "${ci_name_of[$pid]:-}" ] && left+=("$pid"); done
      mine=("${left[@]+"${left[@]}"}")
    done
    ci_start "$arg" "$func" "$arg"
    mine+=("$!")
  done
  while [ ${#mine[@]} -gt 0 ]; do
    ci_wait_one "${mine[@]}"
    local left=()
    for pid in "${mine[@]}"; do [ -n "${ci_name_of[$pid]:-}" ] && left+=("$pid"); done
    mine=("${left[@]+"${left[@]}"}")
  done
  ci_stop_if_failed
  ci_group=$((ci_group + 20))
  ci_job="$(printf '%03d' "$ci_group")-main"
}

# The integration test binaries of `cargo test`'s build: CRATE<TAB>DIR<TAB>EXECUTABLE lines,
# written by ci_build_tests.
ci_bins="$ci_out/test-binaries"

ci_build_tests() { # cargo test --no-run, remembering where its `it` binaries are
  cargo test --locked --no-run --message-format=json-render-diagnostics | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and t.get("name") == "it" and t.get("kind") == ["test"]:
        print("\t".join([m["manifest_path"], os.path.dirname(m["manifest_path"]), m["executable"]]))
' >"$ci_bins.raw"
  # The crate name: its manifest'"'"'s [package] name.
  : >"$ci_bins"
  local manifest dir exe
  while IFS=$'\t' read -r manifest dir exe; do
    printf '%s\t%s\t%s\n' "$(sed -n '/^\[package\]/,/^\[/s/^name = "\(.*\)"/\1/p' "$manifest")" "$dir" "$exe" >>"$ci_bins"
  done <"$ci_bins.raw"
  rm "$ci_bins.raw"
  echo "test binaries: $(cut -f1 "$ci_bins" | tr '\n' ' ')"
}

ci_it() { # .ci/it on the binaries of ci_build_tests
  PI_CI_TEST_BINARIES="$ci_bins" bash .ci/it "$@"
}

ci_table() {
  local status=$?
  [ -d "$ci_out/rows" ] || return "$status"
  printf '\n=== timing (seconds: wall, and the CPU time of what the step ran; deps: dependency crates it compiled)\n'
  printf '%-76s %7s %7s %5s  %s\n' step wall cpu deps result
  local f name secs result log deps cpu
  for f in $(ls "$ci_out/rows" | sort); do
    while IFS=$'\t' read -r name secs result log; do
      deps=$(awk -F'\t' '$2 != "local"' "$log" 2>/dev/null | wc -l)
      cpu=$(tail -1 "${log/rustc/cpu}" 2>/dev/null | ci_cpu)
      printf '%-76s %7s %7s %5s  %s\n' "$name" "$secs" "$cpu" "$deps" "$result"
    done <"$ci_out/rows/$f"
    case "$f" in
      *-main) ;;
      *) printf '%-76s %7s\n' "${f#*-*-}: the job's steps, one after another (sum)" \
        "$(awk -F'\t' '{ s += $2 } END { printf "%.1f", s }' "$ci_out/rows/$f")" ;;
    esac
  done
  times >"$ci_out/times"
  printf '%-76s %7s %7s\n' "total" "$(ci_secs "$ci_t0")" "$(tail -1 "$ci_out/times" | ci_cpu)"
  # Dependencies compiled more than once for one (profile, mode): each should be once.
  local twice
  twice=$(cat "$ci_out"/rustc/* 2>/dev/null | awk -F'\t' '$2 != "local"' | sort | uniq -d | awk -F'\t' '{ printf "%s %s (%s, %s); ", $2, $1, $3, $4 }')
  echo "dependencies compiled twice for one profile and mode (in one target directory): ${twice:-none}"
  return "$status"
}
