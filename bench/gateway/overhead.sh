#!/usr/bin/env bash
# Gateway overhead, in one run (docs/PERFORMANCE.md):
#   bench/gateway/overhead.sh [build-dir]
# A fast backend (bench/http/http_bench_server: POST /v1/chat/completions
# answers a fixed small completion inline) is called three ways with wrk:
# directly, through `omniserve gateway`, and through nginx (Debian package)
# configured as a plain keep-alive reverse proxy to the same backend.
#  1. added p50 latency: one connection, one request at a time;
#  2. requests/s: 32 connections, gateway vs nginx (both with 2 workers).
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
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || { echo "nginx not installed (scripts/setup.sh)" >&2; exit 1; }

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

ng_port="$(free_port)"
mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  upstream backend { server 127.0.0.1:$backend; keepalive 64; }
  server {
    listen 127.0.0.1:$ng_port;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
NGINX
/usr/sbin/nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
pids+=($!)
for _ in $(seq 1 100); do curl -sf -X POST -d '{}' "http://127.0.0.1:$ng_port/v1/chat/completions" >/dev/null 2>&1 && break; sleep 0.1; done

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model":"bench","messages":[{"role":"user","content":"Say ok. This is a short prompt of about one hundred characters."}],"max_tokens":1}'
wrk.headers["Content-Type"] = "application/json"
LUA

read -r _ _ direct_p50 < <(run_wrk direct1 "$backend" 1 1)
read -r _ _ gw_p50 < <(run_wrk gateway1 "$gw_port" 1 1)
read -r _ _ ng_p50 < <(run_wrk nginx1 "$ng_port" 1 1)
read -r _ gw_rps _ < <(run_wrk gateway32 "$gw_port" 32 2)
read -r _ ng_rps _ < <(run_wrk nginx32 "$ng_port" 32 2)

/usr/bin/python3 - "$(to_ms "$direct_p50")" "$(to_ms "$gw_p50")" "$(to_ms "$ng_p50")" "$gw_rps" "$ng_rps" <<'PY'
import sys
direct, gw, ng, gw_rps, ng_rps = map(float, sys.argv[1:])
print(f"p50 latency, 1 connection: direct {direct:.3f} ms, gateway {gw:.3f} ms, nginx {ng:.3f} ms")
print(f"added p50: gateway {gw - direct:.3f} ms (target <= 0.3), nginx {ng - direct:.3f} ms")
print(f"requests/s at 32 connections: gateway {gw_rps:.0f}, nginx {ng_rps:.0f}, ratio {gw_rps / ng_rps:.2f} (target >= 0.8)")
PY
