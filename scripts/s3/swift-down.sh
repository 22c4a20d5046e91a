#!/usr/bin/env bash
# Stops a server started by swift-up.sh and removes its state directory.
#
# Usage:  scripts/s3/swift-down.sh DIR      (DIR = the SWIFT_DIR printed by swift-up.sh)
#   S3_KEEP_DIR=1  stop the processes but keep DIR (logs, data) for inspection.
#
# Signals exactly the PIDs listed in DIR/pids (SIGTERM, then SIGKILL after 5 s),
# and only if each PID still has the start time recorded by swift-up.sh (so a
# recycled PID is never touched). Refuses to delete a directory that swift-up.sh
# did not create (no DIR/.omniserve-swift marker).
set -uo pipefail

log() { echo "[swift-down] $*" >&2; }
[[ $# -eq 1 && -n "$1" ]] || { echo "usage: $0 SWIFT_DIR" >&2; exit 2; }
DIR=$1
[[ -d "$DIR" ]] || { log "$DIR: no such directory (already stopped?)"; exit 0; }
[[ -f "$DIR/.omniserve-swift" ]] || { log "ERROR: $DIR was not created by swift-up.sh (no .omniserve-swift marker); refusing"; exit 1; }

# alive = exists and is not a zombie (our servers get reparented to PID 1 when
# swift-up.sh exits; a slow reaper would otherwise make kill -0 lie).
# /proc/PID/stat fields after the "(comm) " part: 1 = state, 20 = start time.
stat_field() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk -v n="$2" '{print $n}'; }
is_alive() { local st; st=$(stat_field "$1" 1); [[ -n $st && $st != Z ]]; }

ours=()   # PIDs that are still the processes we started
if [[ -f "$DIR/pids" ]]; then
  while read -r pid name start; do
    [[ $pid =~ ^[0-9]+$ ]] || continue
    [[ -r /proc/$pid/stat ]] || continue
    now=$(stat_field "$pid" 20)
    if [[ "$now" != "$start" ]]; then
      log "pid $pid ($name): start time changed, not ours any more; skipping"
      continue
    fi
    ours+=("$pid")
  done <"$DIR/pids"
fi

if ((${#ours[@]})); then
  log "SIGTERM ${ours[*]}"
  kill -TERM "${ours[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=()
    for pid in "${ours[@]}"; do is_alive "$pid" && alive+=("$pid"); done
    ((${#alive[@]})) || break
    sleep 0.1
  done
  alive=()
  for pid in "${ours[@]}"; do is_alive "$pid" && alive+=("$pid"); done
  if ((${#alive[@]})); then
    log "SIGKILL ${alive[*]}"
    kill -KILL "${alive[@]}" 2>/dev/null || true
    sleep 0.2
  fi
fi

if [[ "${S3_KEEP_DIR:-0}" == 1 ]]; then
  rm -f "$DIR/pids"
  log "stopped; kept $DIR"
else
  rm -rf -- "$DIR"
  log "stopped; removed $DIR"
fi
