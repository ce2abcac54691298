#!/usr/bin/env bash
# Stop a code-server started by start.sh and every descendant (extension hosts, pty host), by PID.
# Usage: stop.sh <run-dir>
RUN_DIR=${1:?run dir}
P=$(cat "$RUN_DIR/pid" 2>/dev/null) || exit 0
desc() { for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do desc "$c"; echo "$c"; done; }
PIDS="$(desc "$P" | tr '\n' ' ') $P"
kill $PIDS 2>/dev/null
for _ in $(seq 1 20); do
  alive=""
  for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  [ -z "$alive" ] && break
  sleep 0.1
done
for p in $PIDS; do kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null; done
rm -f "$RUN_DIR/pid"
echo "stopped code-server: $PIDS"
