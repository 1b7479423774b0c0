#!/usr/bin/env bash
# lib.sh holds what the set-up scripts share; source it after setting
# PREFIX (the name their messages start with).

log() { printf '%s: %s\n' "${PREFIX:-codegenie}" "$*" >&2; }

# long DESCRIPTION CMD...: runs CMD, saying what it does, and every 20 s
# that it still does, so that nothing is silent for long; CMD's output goes
# to stderr. It fails as CMD fails.
long() {
  local what=$1 start=$SECONDS pid rc=0
  shift
  log "$what"
  "$@" >&2 &
  pid=$!
  while ! wait_for "$pid" 20; do
    log "  ... still at it, $((SECONDS - start)) s so far"
  done
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    log "failed: $what (exit $rc)"
    return "$rc"
  fi
  log "  done in $((SECONDS - start)) s"
}

# wait_for PID SECONDS: true once PID has exited, false while it still runs
# after SECONDS.
wait_for() {
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.25
  done
  ! kill -0 "$1" 2>/dev/null
}
