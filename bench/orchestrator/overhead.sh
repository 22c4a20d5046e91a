#!/usr/bin/env bash
# The orchestrator's overhead, in one run (docs/PERFORMANCE.md):
#   bench/orchestrator/overhead.sh [build-dir]
# A fast backend (bench/http/http_bench_server: POST /v1/chat/completions
# answers a fixed small completion inline) behind `omniserve gateway`, called
# with wrk through the gateway directly and through `omniserve orchestrator`
# in front of that gateway (which parses and checks each request first):
#  1. added p50 latency: one connection, one request at a time;
#  2. requests/s at 32 connections, orchestrator + gateway vs gateway alone.
# The orchestrator's --io-threads is given by ORCH_IO_THREADS (default 2).
# Starts and stops only its own processes (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
duration="${DURATION:-10s}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk not installed (scripts/setup.sh)" >&2; exit 1; }

"$build/bench/http/http_bench_server" --port 0 --threads 1 >"$work/backend.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q port= "$work/backend.out" && break; sleep 0.1; done
backend="$(sed -n 's/^port=//p' "$work/backend.out")"

cat >"$work/gateway.yaml" <<YAML
plugins: [{type: prefix-cache-scorer}, {type: queue-scorer}, {type: kv-cache-utilization-scorer}, {type: max-score-picker}]
schedulingProfiles:
- name: default
  plugins: [{pluginRef: prefix-cache-scorer, weight: 3}, {pluginRef: queue-scorer, weight: 2},
            {pluginRef: kv-cache-utilization-scorer, weight: 2}, {pluginRef: max-score-picker}]
pools:
- {name: llm, role: llm, models: [bench], endpoints: ["127.0.0.1:$backend"], schedulingProfile: default}
YAML
gw_port="$(free_port)"
"$build/omniserve" --log-level warn gateway --config "$work/gateway.yaml" --port "$gw_port" >"$work/gateway.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$gw_port/health"

cat >"$work/orchestrator.yaml" <<YAML
gateway: http://127.0.0.1:$gw_port
YAML
or_port="$(free_port)"
"$build/omniserve" --log-level warn orchestrator --config "$work/orchestrator.yaml" --port "$or_port" \
  --io-threads "${ORCH_IO_THREADS:-2}" >"$work/orchestrator.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$or_port/health"

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model":"bench","messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly."},{"role":"user","content":"Say ok. This is a short prompt of about one hundred characters."}],"max_tokens":1,"temperature":0}'
wrk.headers["Content-Type"] = "application/json"
LUA

read -r _ _ gw_p50 < <(run_wrk gateway1 "$gw_port" 1 1)
read -r _ _ or_p50 < <(run_wrk orchestrator1 "$or_port" 1 1)
read -r _ gw_rps _ < <(run_wrk gateway32 "$gw_port" 32 2)
read -r _ or_rps _ < <(run_wrk orchestrator32 "$or_port" 32 2)

/usr/bin/python3 - "$(to_ms "$gw_p50")" "$(to_ms "$or_p50")" "$gw_rps" "$or_rps" <<'PY'
import sys
gw, orch, gw_rps, or_rps = map(float, sys.argv[1:])
print(f"p50 latency, 1 connection: gateway {gw:.3f} ms, orchestrator + gateway {orch:.3f} ms")
print(f"added p50: orchestrator {orch - gw:.3f} ms (target <= 1)")
print(f"requests/s at 32 connections: gateway {gw_rps:.0f}, orchestrator + gateway {or_rps:.0f}, ratio {or_rps / gw_rps:.2f}")
PY
