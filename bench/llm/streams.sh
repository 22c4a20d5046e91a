#!/usr/bin/env bash
# Many concurrent streams on one LLM server (docs/PERFORMANCE.md, "Bounded
# work"), in one run:
#   bench/llm/streams.sh [build-dir] [old-build-dir]
# 1. 2,000 concurrent streaming requests against one `omniserve llm` on the
#    demo model, sampling the server's thread count every 20 ms throughout;
#    reports completed/failed requests and the most threads seen.
# 2. output tokens/s at 256 streams, and, when old-build-dir holds a build of
#    an earlier commit (the thread-per-request adapter), the same run against
#    it, back to back, with the ratio.
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
old="${2:-}"
work="$(mktemp -d)"
pid=""
sampler=""
cleanup() {
  [[ -n "$sampler" ]] && kill "$sampler" 2>/dev/null || true
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 16384  # 2,000 client and 2,000 server sockets

"$build/omniserve" make-demo-model --component llm --out "$work/model" >/dev/null

start_server() {  # start_server BIN NAME [llm flags...]
  local bin="$1" name="$2"
  shift 2
  "$bin" llm --model "$work/model" --served-model-name demo --port 0 --threads 1 "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  wait_for_llm "$work/$name.log"
}
stop_server() {
  kill "$pid"
  wait "$pid" || true
  pid=""
}
sample_threads() {  # sample_threads FILE: the server's thread count every 20 ms
  while kill -0 "$pid" 2>/dev/null; do
    awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true
    sleep 0.02
  done >"$1"
}
run_bench() {  # run_bench NAME [bench flags...]
  local name="$1"
  shift
  "$build/omniserve" bench --base-url "$base" --model demo --label "$name" --json "$work/$name.json" "$@" >/dev/null
}

start_server "$build/omniserve" many --num-kv-blocks 4096 --max-num-seqs 256
sample_threads "$work/threads.txt" &
sampler=$!
run_bench streams2000 --concurrency 2000 --num-requests 2000 --input-len 16 --output-len 32 --seed 3
kill "$sampler"; wait "$sampler" 2>/dev/null || true; sampler=""
run_bench new256 --concurrency 256 --num-requests 1024 --input-len 16 --output-len 64 --seed 5
stop_server
if [[ -n "$old" ]]; then
  start_server "$old/omniserve" old --num-kv-blocks 4096 --max-num-seqs 256
  run_bench old256 --concurrency 256 --num-requests 1024 --input-len 16 --output-len 64 --seed 5
  stop_server
  start_server "$build/omniserve" new2 --num-kv-blocks 4096 --max-num-seqs 256
  run_bench new256b --concurrency 256 --num-requests 1024 --input-len 16 --output-len 64 --seed 5
  stop_server
fi

/usr/bin/python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def res(n):
    return json.load(open(f"{work}/{n}.json"))["results"]
threads = [int(x) for x in open(f"{work}/threads.txt").read().split()]
r = res("streams2000")
print(f"2000 concurrent streams: {r['completed']} completed, {r['failed']} failed; "
      f"server threads max {max(threads)} (min {min(threads)}, {len(threads)} samples)")
new = res("new256")["output_tokens_per_s"]
if os.path.exists(f"{work}/old256.json"):
    old = res("old256")["output_tokens_per_s"]
    new2 = res("new256b")["output_tokens_per_s"]
    print(f"256 streams: {new:.0f} and {new2:.0f} output tok/s (this build, before and after) vs "
          f"{old:.0f} (old adapter) = {new/old:.2f}x / {new2/old:.2f}x")
else:
    print(f"256 streams: {new:.0f} output tok/s")
PY
