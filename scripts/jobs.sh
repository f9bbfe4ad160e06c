# Side by side, a few at a time (sourced by the recorder scripts and drift-lane.sh):
#
#   run_jobs N FUNC ARG...   runs `FUNC ARG` for each ARG, at most N at a time (N=1: one after
#                            another, as written), each job's output printed whole when it ends;
#                            returns 1 when one failed (after all ended), naming those that did
#   wait_any PID...          waits until one of these background jobs has ended: its pid in
#                            REAPED, its exit status in REAPED_STATUS
#
# The jobs wait on the CPU, not on each other: a recording waits mostly on its CLI and its
# scripted model's pauses, so two or three share 2 cores well.
wait_any() {
  local p status=0
  REAPED=""
  # `wait -n` does not return for a job that ended before it was called: look for one first.
  for p in "$@"; do
    if ! kill -0 "$p" 2>/dev/null; then
      REAPED=$p
      wait "$p" || status=$?
      REAPED_STATUS=$status
      return 0
    fi
  done
  wait -n -p REAPED "$@" || status=$?
  # Nothing reaped (one ended between the look and the wait): the next call finds it.
  [ -n "$REAPED" ] || sleep 0.1
  REAPED_STATUS=$status
}

run_jobs() {
  local max="$1" func="$2" pid logs
  shift 2
  if [ "$max" -le 1 ]; then
    local arg failed=()
    for arg in "$@"; do "$func" "$arg" || failed+=("$arg"); done
    [ ${#failed[@]} -eq 0 ] || { echo "run_jobs: failed: ${failed[*]}" >&2; return 1; }
    return 0
  fi
  logs="$(mktemp -d "${TMPDIR:-/tmp}/pi-harness-jobs.XXXXXX")"
  local -A running=()
  local queue=("$@") failed=() n=0
  while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
    while [ ${#queue[@]} -gt 0 ] && [ ${#running[@]} -lt "$max" ]; do
      n=$((n + 1))
      # (trap - INT QUIT: a background job would start with them ignored, and so would
      # the CLIs it records.)
      (trap - INT QUIT; "$func" "${queue[0]}") >"$logs/$n" 2>&1 </dev/null &
      running[$!]="$n ${queue[0]}"
      queue=("${queue[@]:1}")
    done
    wait_any "${!running[@]}"
    pid=$REAPED
    [ -n "$pid" ] || continue
    cat "$logs/${running[$pid]%% *}"
    [ "$REAPED_STATUS" -eq 0 ] || failed+=("${running[$pid]#* }")
    unset "running[$pid]"
  done
  rm -rf "$logs"
  [ ${#failed[@]} -eq 0 ] || { echo "run_jobs: failed: ${failed[*]}" >&2; return 1; }
}
