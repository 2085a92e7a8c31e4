# recond_fixture.sh: sourced by the test scripts that drive a real recond (bash, set -euo pipefail).
# Needs $recond (the daemon), $reconctl and $work (a fresh directory, removed at exit).
#   start_recond LOG ARGS...  recond --foreground --config /dev/null ARGS, in the script's background
#   wait_ready SOCKETS LOG    until `reconctl wait-ready` says so (600 s); else prints LOG and exits 1
#   kill_recond               stops it, whatever its exit status (between the phases of a test)
#   stop_recond               SIGTERM; the test fails unless recond exits 0
# An EXIT trap kills a recond still running and removes $work.
recond_pid=
recond_fixture_cleanup() {
  if [ -n "$recond_pid" ]; then kill "$recond_pid" 2>/dev/null || true; wait "$recond_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap recond_fixture_cleanup EXIT

start_recond() {
  local log=$1
  shift
  "$recond" --foreground --config /dev/null "$@" >"$log" 2>&1 &
  recond_pid=$!
}

wait_ready() {
  if ! "$reconctl" --socket-dir "$1" --timeout 600 wait-ready 600 --quiet; then
    cat "$2"
    exit 1
  fi
}

kill_recond() {
  kill "$recond_pid"
  wait "$recond_pid" 2>/dev/null || true
  recond_pid=
}

stop_recond() {
  kill -TERM "$recond_pid"
  wait "$recond_pid"
  recond_pid=
}
