#!/usr/bin/env bash
# The LLM server under tight process limits (docs/PERFORMANCE.md, "Bounded
# work"):
#   bench/llm/limits.sh [build-dir]
# For each of `ulimit -u 150` (threads; run as the unprivileged user nobody,
# since root is exempt from RLIMIT_NPROC) and `ulimit -v 3500000` (address
# space, KiB): 500 concurrent streams against one `omniserve llm` on the demo
# model. Reports completed requests and the errors by kind (the excess may
# get 429 or 503, never 500) and checks the server still serves. Then, with a
# new load of long streams running, SIGTERM with --drain-timeout-ms 3000 and
# the seconds until the process exited (the target: within the deadline
# plus 5 s), and how the streams ended.
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
chmod 755 "$work"
pid=""
loadpid=""
cleanup() {
  [[ -n "$loadpid" ]] && kill "$loadpid" 2>/dev/null || true
  [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 16384

"$build/omniserve" make-demo-model --component llm --out "$work/model" >/dev/null
chmod -R a+rX "$work/model"

start_server() {  # start_server NAME LIMIT_CMD
  local name="$1" limit="$2"
  local cmd="ulimit -n 4096; $limit; exec '$build/omniserve' llm --model '$work/model' --served-model-name demo \
    --port 0 --threads 1 --num-kv-blocks 2048 --drain-timeout-ms 3000"
  if [[ "$name" == nproc ]]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "$cmd" >"$work/$name.log" 2>&1 &
  else
    bash -c "$cmd" >"$work/$name.log" 2>&1 &
  fi
  pid=$!
  wait_for_llm "$work/$name.log"
}

one_case() {  # one_case NAME LIMIT_CMD
  local name="$1"
  start_server "$@"
  "$build/omniserve" bench --base-url "$base" --model demo --concurrency 500 --num-requests 500 \
    --input-len 16 --output-len 64 --seed 1 --json "$work/$name.json" >/dev/null || true
  local alive=no
  kill -0 "$pid" 2>/dev/null && curl -sf "$base/health" >/dev/null && alive=yes
  local threads
  threads="$(awk '/^Threads:/ {print $2}' /proc/$pid/status 2>/dev/null || echo '?')"
  # SIGTERM under load: long streams, then the signal once they run.
  "$build/omniserve" bench --base-url "$base" --model demo --concurrency 64 --num-requests 64 \
    --input-len 16 --output-len 2000 --seed 2 --save-requests --json "$work/$name-drain.json" >/dev/null 2>&1 &
  loadpid=$!
  sleep 2
  local t0 t1
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  local status=0
  wait "$pid" || status=$?
  t1=$(date +%s.%N)
  pid=""
  wait "$loadpid" || true
  loadpid=""
  /usr/bin/python3 - "$work" "$name" "$alive" "$threads" "$t0" "$t1" "$status" <<'PY'
import json, sys
work, name, alive, threads, t0, t1, status = sys.argv[1:]
r = json.load(open(f"{work}/{name}.json"))["results"]
d = json.load(open(f"{work}/{name}-drain.json"))["results"]
print(f"{name}: 500 streams: {r['completed']} completed, {r['failed']} failed, errors {r['errors']}; "
      f"serving after: {alive}; threads {threads}")
print(f"{name}: SIGTERM with 64 long streams running: exited {float(t1) - float(t0):.1f} s later "
      f"(drain 3 s) with status {status}; streams: {d['completed']} completed, errors {d['errors']}")
PY
}

one_case nproc "ulimit -u 150"
one_case vmem "ulimit -v 3500000"
