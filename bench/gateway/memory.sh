#!/usr/bin/env bash
# The gateway's memory around large bodies (docs/PERFORMANCE.md, "Bounded
# work"), in one run:
#   bench/gateway/memory.sh [build-dir]
# Ten concurrent 60 MiB POSTs through `omniserve gateway` to a fast backend
# (bench/http/http_bench_server), twice: with the default body budget (256
# MiB: the bodies past it get 503) and with a 1 GiB budget (all ten
# buffered at once). Reports the gateway's RSS idle (after a warm-up),
# at its peak (sampled every 20 ms) and 2 s after the last reply, and the
# statuses the ten got. GATEWAY_BIN=path/to/omniserve runs one unflagged
# run of that binary's gateway instead (an older build, for comparison).
# Starts and stops only its own processes (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
gateway_bin="${GATEWAY_BIN:-$build/omniserve}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
rss_mib() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# The backend takes all ten bodies, so only the gateway's budget decides.
"$build/bench/http/http_bench_server" --port 0 --threads 1 --max-inflight-body-bytes 2147483648 >"$work/backend.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q port= "$work/backend.out" && break; sleep 0.1; done
backend="$(sed -n 's/^port=//p' "$work/backend.out")"
cat >"$work/gateway.yaml" <<YAML
plugins: [{type: queue-scorer}, {type: max-score-picker}]
schedulingProfiles:
- name: default
  plugins: [{pluginRef: queue-scorer, weight: 1}, {pluginRef: max-score-picker}]
pools:
- {name: llm, role: llm, models: [bench], endpoints: ["127.0.0.1:$backend"], schedulingProfile: default}
YAML
/usr/bin/python3 - "$work/big.json" <<'PY'
import sys
pad = "a" * (60 * 2**20 - 200)
open(sys.argv[1], "w").write('{"model":"bench","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"pad":"' + pad + '"}')
PY

one_run() {  # one_run LABEL [gateway flags...]
  local label="$1"
  shift
  local port
  port="$(free_port)"
  "$gateway_bin" --log-level warn gateway --config "$work/gateway.yaml" --port "$port" "$@" >"$work/gw-$label.log" 2>&1 &
  local gw=$!
  pids+=($gw)
  wait_http "http://127.0.0.1:$port/health"
  for _ in $(seq 1 20); do
    curl -s -o /dev/null -X POST -H 'content-type: application/json' \
      -d '{"model":"bench","messages":[{"role":"user","content":"hi"}],"max_tokens":1}' "http://127.0.0.1:$port/v1/chat/completions"
  done
  sleep 1
  local idle peak=0 r
  idle="$(rss_mib "$gw")"
  ( while kill -0 "$gw" 2>/dev/null; do rss_mib "$gw"; echo; sleep 0.02; done ) >"$work/rss-$label.txt" &
  local sampler=$!
  local cpids=()
  for i in $(seq 1 10); do
    curl -s -o /dev/null -w '%{http_code}\n' -X POST -H 'content-type: application/json' --data-binary @"$work/big.json" \
      "http://127.0.0.1:$port/v1/chat/completions" >"$work/status-$label-$i.txt" 2>/dev/null &
    cpids+=($!)
  done
  for p in "${cpids[@]}"; do wait "$p" || true; done
  sleep 2
  local after
  after="$(rss_mib "$gw")"
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  peak="$(sort -n "$work/rss-$label.txt" | tail -1)"
  local statuses
  statuses="$(cat "$work"/status-"$label"-*.txt | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
  kill "$gw"
  wait "$gw" 2>/dev/null || true
  /usr/bin/python3 -c "import sys; i,p,a=map(float,sys.argv[1:4]); print(f'{sys.argv[4]}: gateway RSS idle {i:.0f} MiB, peak {p:.0f} MiB, 2 s after {a:.0f} MiB = {a/i:.2f}x idle; statuses: {sys.argv[5]}')" \
    "$idle" "$peak" "$after" "$label" "$statuses"
}

if [[ -n "${GATEWAY_BIN:-}" ]]; then
  one_run given-binary
else
  one_run default-budget
  one_run 1GiB-budget --max-inflight-body-bytes 1073741824
fi
