#!/usr/bin/env bash
# Prefix-cache hits of multi-turn chats through the whole stack, in one run
# (docs/PERFORMANCE.md):
#   bench/orchestrator/prefix_hits.sh [build-dir]
# `omniserve up` on the demo model with 1 LLM replica, then with 2 (the
# gateway's prefix-aware pick on the path), each loaded by `omniserve bench
# --workload multi-turn` through the client port (orchestrator -> gateway ->
# replicas): conversations of TURNS turns that share NUM_PREFIXES system
# prompts, CONCURRENCY conversations at a time. With 1 replica every turn
# finds its history; the figure of merit is how much of that the 2-replica
# stack keeps (the ratio of hit rates), and what it does to throughput.
# Starts and stops only its own processes (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
requests="${REQUESTS:-96}"
concurrency="${CONCURRENCY:-4}"
turns="${TURNS:-4}"
prefixes="${NUM_PREFIXES:-4}"
work="$(mktemp -d)"
up_pid=""
cleanup() {
  [[ -n "$up_pid" ]] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

run() {  # run REPLICAS
  local replicas="$1" port
  port="$(free_port)"
  "$build/omniserve" --log-level warn up --port "$port" --data-dir "$work/data" --llm-replicas "$replicas" \
    >"$work/up-$replicas.log" 2>&1 &
  up_pid=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "up did not come up" >&2; cat "$work/up-$replicas.log" >&2; exit 1; }
  "$build/omniserve" --log-level warn bench --base-url "http://127.0.0.1:$port" --model omni-demo \
    --workload multi-turn --num-requests "$requests" --concurrency "$concurrency" --turns "$turns" \
    --num-prefixes "$prefixes" --prefix-len 200 --input-len 40 --output-len 16 --temperature 0 --seed 7 \
    --label "replicas=$replicas" --json "$work/r$replicas.json" >"$work/bench-$replicas.txt"
  kill "$up_pid"
  wait "$up_pid" || true
  up_pid=""
}

run 1
run 2
/usr/bin/python3 - "$work/r1.json" "$work/r2.json" <<'PY'
import json, sys
one, two = (json.load(open(p))["results"] for p in sys.argv[1:])
for name, r in (("1 replica ", one), ("2 replicas", two)):
    print(f"{name}: {r['completed']}/{r['requests']} completed, prefix-cache hit rate {r['prefix_cache_hit_rate']:.3f}, "
          f"{r['request_throughput']:.2f} req/s, TTFT p50 {r['ttft_ms']['p50']:.1f} ms")
print(f"hit rate, 2 replicas / 1 replica: {two['prefix_cache_hit_rate'] / one['prefix_cache_hit_rate']:.2f}")
print(f"throughput, 2 replicas / 1 replica: {two['request_throughput'] / one['request_throughput']:.2f}")
PY
