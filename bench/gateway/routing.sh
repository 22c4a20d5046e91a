#!/usr/bin/env bash
# The headline routing benchmark, in one run (docs/PERFORMANCE.md):
#   bench/gateway/routing.sh [build-dir]
# Four `omniserve llm` replicas of the `small` demo model (`--threads 1`
# each, a KV budget of KV_BLOCKS 16-token blocks each, KV events on) behind
# `omniserve gateway`, driven by `omniserve bench` with a multi-turn workload
# where every turn resends the conversation: several system prompts, many
# concurrent conversations, and a per-replica KV budget well below the total
# prefix footprint. One run per policy, each on freshly started replicas:
#   round-robin, random, load-only (queue 2 + kv-utilization 2),
#   approximate prefix (prefix 3 + queue 2 + kv 2), precise prefix (same, precise).
# Plus the hit-rate ceiling: one replica with SINGLE_BLOCKS (room for every
# conversation), no gateway.
# Starts and stops only its own processes (by PID).
set -euo pipefail
build="${1:-build}"
bin="$build/omniserve"
KV_BLOCKS="${KV_BLOCKS:-480}"
# prefix : queue : kv-utilization weights of the precise policy (the
# approximate one is llm-d's 3:2:2).
PRECISE_WEIGHTS="${PRECISE_WEIGHTS:-3 2 2}"
SINGLE_BLOCKS="${SINGLE_BLOCKS:-4096}"
CONC="${CONC:-16}"
REQS="${REQS:-320}"
WORKLOAD=(--workload multi-turn --num-prefixes "${PREFIXES:-8}" --prefix-len "${PREFIX_LEN:-300}" --input-len 30
  --output-len 8 --turns 4 --concurrency "$CONC" --num-requests "$REQS" --seed 5 --temperature 0)
work="$(mktemp -d)"
replica_pids=()
gw_pid=""
stop_all() {
  [[ -n "$gw_pid" ]] && { kill "$gw_pid" 2>/dev/null; wait "$gw_pid" 2>/dev/null || true; }
  gw_pid=""
  for p in "${replica_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${replica_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  replica_pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

"$bin" make-demo-model --component llm --preset small --out "$work/model" >/dev/null

wait_log() {  # wait_log FILE REGEX -> first group
  for _ in $(seq 1 600); do
    local v
    v="$(grep -oE "$2" "$1" | head -1 | sed -E "s#$2#\1#" || true)"
    [[ -n "$v" ]] && { echo "$v"; return 0; }
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}
start_replicas() {  # start_replicas COUNT BLOCKS: fills $ports and $events
  ports=(); events=()
  for i in $(seq 1 "$1"); do
    "$bin" llm --model "$work/model" --served-model-name small --port 0 --threads 1 \
      --num-kv-blocks "$2" --kv-events tcp://127.0.0.1:0 >"$work/replica$i.log" 2>&1 &
    replica_pids+=($!)
  done
  for i in $(seq 1 "$1"); do
    ports+=("$(wait_log "$work/replica$i.log" 'listening on http://127.0.0.1:([0-9]+)')")
    events+=("$(wait_log "$work/replica$i.log" 'publishing KV events on (tcp://127.0.0.1:[0-9]+)')")
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$p/health" >/dev/null && break; sleep 0.1; done
  done
}

write_config() {  # write_config POLICY FILE
  local plugins profile
  case "$1" in
    round-robin) plugins='[{type: round-robin-picker}]'; profile='[{pluginRef: round-robin-picker}]' ;;
    random) plugins='[{type: random-picker}]'; profile='[{pluginRef: random-picker}]' ;;
    load-only)
      plugins='[{type: queue-scorer}, {type: kv-cache-utilization-scorer}, {type: max-score-picker}]'
      profile='[{pluginRef: queue-scorer, weight: 2}, {pluginRef: kv-cache-utilization-scorer, weight: 2}, {pluginRef: max-score-picker}]' ;;
    approx-prefix)
      plugins='[{type: prefix-cache-scorer}, {type: queue-scorer}, {type: kv-cache-utilization-scorer}, {type: max-score-picker}]'
      profile='[{pluginRef: prefix-cache-scorer, weight: 3}, {pluginRef: queue-scorer, weight: 2}, {pluginRef: kv-cache-utilization-scorer, weight: 2}, {pluginRef: max-score-picker}]' ;;
    precise-prefix)
      read -r wp wq wk <<<"$PRECISE_WEIGHTS"
      plugins='[{type: precise-prefix-cache-scorer}, {type: queue-scorer}, {type: kv-cache-utilization-scorer}, {type: max-score-picker}]'
      profile="[{pluginRef: precise-prefix-cache-scorer, weight: $wp}, {pluginRef: queue-scorer, weight: $wq}, {pluginRef: kv-cache-utilization-scorer, weight: $wk}, {pluginRef: max-score-picker}]" ;;
  esac
  {
    echo "plugins: $plugins"
    echo "schedulingProfiles:"
    echo "- {name: default, plugins: $profile}"
    echo "pools:"
    echo "- name: llm"
    echo "  role: llm"
    echo "  models: [small]"
    echo "  schedulingProfile: default"
    echo "  tokenizer: $work/model"
    echo "  endpoints: [$(printf '"127.0.0.1:%s",' "${ports[@]}" | sed 's/,$//')]"
    echo "  kvEvents: [$(printf '"%s",' "${events[@]}" | sed 's/,$//')]"
  } >"$2"
}

# POLICIES: a subset to run; round-robin is always needed for the ratios.
read -r -a policies <<<"${POLICIES:-round-robin random load-only approx-prefix precise-prefix}"
for policy in "${policies[@]}"; do
  start_replicas 4 "$KV_BLOCKS"
  write_config "$policy" "$work/$policy.yaml"
  "$bin" gateway --config "$work/$policy.yaml" --port 0 >"$work/gateway-$policy.log" 2>&1 &
  gw_pid=$!
  gw_port="$(wait_log "$work/gateway-$policy.log" 'gateway: listening on http://127.0.0.1:([0-9]+)')"
  sleep 0.3  # a first scrape of every replica
  "$bin" bench --base-url "http://127.0.0.1:$gw_port" --model small --label "$policy" \
    --json "$work/$policy.json" "${WORKLOAD[@]}" >/dev/null
  stop_all
done
start_replicas 1 "$SINGLE_BLOCKS"
"$bin" bench --base-url "http://127.0.0.1:${ports[0]}" --model small --label single-replica \
  --json "$work/single.json" "${WORKLOAD[@]}" >/dev/null
stop_all

/usr/bin/python3 - "$work" "${policies[@]}" <<'PY'
import json, sys
work, policies = sys.argv[1], sys.argv[2:]
r = {p: json.load(open(f"{work}/{p}.json"))["results"] for p in policies}
single = json.load(open(f"{work}/single.json"))["results"]
ceiling = single["prefix_cache_hit_rate"]
rr = r["round-robin"]
print(f"hit-rate ceiling (one replica holding everything): {ceiling:.3f}")
print(f"{'policy':15} {'hit rate':>8} {'of ceiling':>10} {'req/s':>7} {'out tok/s':>9} {'vs RR':>6} {'TTFT p50 ms':>11} {'p90 ms':>8} {'failed':>6}")
for p in policies:
    x = r[p]
    print(f"{p:15} {x['prefix_cache_hit_rate']:8.3f} {x['prefix_cache_hit_rate'] / ceiling:10.2f} {x['request_throughput']:7.2f}"
          f" {x['output_tokens_per_s']:9.1f} {x['request_throughput'] / rr['request_throughput']:6.2f}"
          f" {x['ttft_ms']['p50']:11.0f} {x['ttft_ms']['p90']:8.0f} {x['failed']:6d}")
PY
