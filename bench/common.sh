# Shell helpers the benchmark scripts share; `source` it. Every server is
# started by the script itself on 127.0.0.1 and stopped by its PID.

# wait_for_llm LOG: waits (up to 60 s) until the `omniserve llm` writing LOG
# has logged its port and answers /health; sets $base. Exits on failure.
wait_for_llm() {
  local log="$1" port=""
  for _ in $(seq 1 600); do
    port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://' || true)"
    if [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null; then break; fi
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "server did not come up" >&2; cat "$log" >&2; exit 1; }
  base="http://127.0.0.1:$port"
}

# A free loopback port (the OS picks it).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_http URL: waits up to 10 s for a 2xx answer.
wait_http() { for _ in $(seq 1 100); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

# use_workdir: a temp dir in $work and an empty $pid; on exit the server whose
# PID the script put in $pid is stopped and $work removed.
use_workdir() {
  work="$(mktemp -d)"
  pid=""
  trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
}

# run_wrk NAME PORT CONNS THREADS: wrk with $work/post.lua against
# http://127.0.0.1:PORT/v1/chat/completions for $duration, output kept in
# $work/NAME.txt; prints "NAME requests/s p50". Exits on any non-2xx answer.
run_wrk() {
  wrk -t"$4" -c"$3" -d"$duration" --latency -s "$work/post.lua" "http://127.0.0.1:$2/v1/chat/completions" >"$work/$1.txt"
  grep -q "Non-2xx" "$work/$1.txt" && { echo "$1: non-2xx answers" >&2; cat "$work/$1.txt" >&2; exit 1; }
  local rps p50
  rps="$(awk '/Requests\/sec/ {print $2}' "$work/$1.txt")"
  p50="$(awk '$1 == "50%" {print $2}' "$work/$1.txt")"
  echo "$1 $rps $p50"
}
# to_ms VALUE: wrk's 95.00us / 1.20ms / 1.01s in milliseconds.
to_ms() {
  /usr/bin/python3 -c 'import sys,re; v=sys.argv[1]; m=re.match(r"([0-9.]+)(us|ms|s)$", v); print(float(m[1]) * {"us": 1e-3, "ms": 1, "s": 1e3}[m[2]])' "$1"
}

# stream_read BUILD FILE: this machine's streaming-read GB/s now
# (ops_bench's StreamRead, JSON in FILE).
stream_read() {
  "$1/bench/ops/ops_bench" --benchmark_filter='StreamRead' --benchmark_format=json >"$2" 2>/dev/null
}
