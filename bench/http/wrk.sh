#!/usr/bin/env bash
# Load-tests the omniserve HTTP server with wrk on this machine: the server
# pinned to core 0, wrk to core 1, 64 connections for 10 s, GET /v1/ping.
#
#   bench/http/wrk.sh [build-dir]          # default build dir: build
#   DURATION=5s CONNS=64 bench/http/wrk.sh build-net
#
# Runs three servers in turn: omniserve with an inline handler, omniserve
# with a worker-pool handler, and bare Beast (the ceiling). Each server is
# started here and only that PID is stopped.
#
# Besides wrk's requests/s it prints requests per CPU-second of the server
# process (requests / (utime + stime)): on a shared machine where other jobs
# steal core 0, that is the steadier estimate of one core's capacity.
set -euo pipefail

BUILD_DIR="${1:-build}"
DURATION="${DURATION:-10s}"
CONNS="${CONNS:-64}"
SERVER_CORE="${SERVER_CORE:-0}"
WRK_CORE="${WRK_CORE:-1}"
BIN="$BUILD_DIR/bench/http"

for exe in "$BIN/http_bench_server" "$BIN/beast_bench_server"; do
  [[ -x "$exe" ]] || { echo "missing $exe; build with -DOMNI_BUILD_BENCH=ON" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "wrk not installed" >&2; exit 1; }

server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap cleanup EXIT

# utime + stime of a process, in clock ticks.
cpu_ticks() {
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# run_one NAME COMMAND...: starts the server, reads its port, runs wrk.
run_one() {
  local name="$1"
  shift
  local out
  out="$(mktemp)"
  taskset -c "$SERVER_CORE" "$@" --port 0 >"$out" &
  server_pid=$!
  local port=""
  for _ in $(seq 1 100); do
    port="$(sed -n 's/^port=//p' "$out")"
    [[ -n "$port" ]] && break
    sleep 0.05
  done
  rm -f "$out"
  [[ -n "$port" ]] || { echo "$name did not start" >&2; exit 1; }
  local ticks_before ticks_after result
  ticks_before="$(cpu_ticks "$server_pid")"
  result="$(taskset -c "$WRK_CORE" wrk -t1 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:$port/v1/ping")"
  ticks_after="$(cpu_ticks "$server_pid")"
  local rps requests latency per_cpu_s
  rps="$(awk '/Requests\/sec/ {print $2}' <<<"$result")"
  requests="$(awk '/requests in/ {print $1}' <<<"$result")"
  latency="$(awk '/Latency/ {print $2; exit}' <<<"$result")"
  per_cpu_s="$(awk -v r="$requests" -v t="$((ticks_after - ticks_before))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (t > 0) printf "%.0f", r / (t / hz); else print "n/a" }')"
  printf '%-26s %10s req/s  %10s req/CPU-s  (avg latency %s)\n' "$name" "$rps" "$per_cpu_s" "$latency"
  cleanup
}

echo "wrk -t1 -c$CONNS -d$DURATION, server on core $SERVER_CORE, wrk on core $WRK_CORE"
run_one "omniserve inline handler" "$BIN/http_bench_server" --threads 1
run_one "omniserve pooled handler" "$BIN/http_bench_server" --threads 1 --workers 1 --pooled
run_one "bare Beast" "$BIN/beast_bench_server"
