#!/usr/bin/env bash
# Served LLM benchmarks for docs/PERFORMANCE.md, all in one run:
#   bench/llm/run.sh [build-dir]
# 1. writes the `bench` demo model (hidden 1024, 12 layers, GQA 16/4, the
#    full Omni vocabulary; bf16), 2. measures this machine's streaming-read
#    bandwidth and bf16 GEMM rate with ops_bench, 3. serves the model with
#    `omniserve llm` and drives it with `omniserve bench`:
#      decode tokens/s at batch 1       vs  bandwidth / model bytes (the
#                                            bandwidth read right before and
#                                            after that run, the better one)
#      prefill tokens/s                  vs  GEMM rate / (2 x non-embedding params)
#      output tokens/s at 16 streams     vs  at 1 stream
#      shared-prefix TTFT, caching on    vs  off (a second server)
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
bin="$build/omniserve"
use_workdir

"$bin" make-demo-model --component llm --preset bench --out "$work/model" >/dev/null
"$build/bench/ops/ops_bench" --benchmark_filter='DecodeBandwidth|LinearVsDnnl/M:512/bf16:1' \
  --benchmark_format=json >"$work/ops.json" 2>/dev/null

start_server() {  # start_server NAME [llm flags...]
  local name="$1"
  shift
  "$bin" llm --model "$work/model" --served-model-name bench --port 0 "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  wait_for_llm "$work/$name.log"
}
stop_server() {
  kill "$pid"
  wait "$pid" || true
  pid=""
}
run_bench() {  # run_bench NAME [bench flags...]
  local name="$1"
  shift
  "$bin" bench --base-url "$base" --model bench --label "$name" --json "$work/$name.json" "$@" >/dev/null
}

start_server cached
stream_read "$build" "$work/stream_before.json"
run_bench decode1 --workload synthetic --concurrency 1 --num-requests 3 --input-len 16 --output-len 128
stream_read "$build" "$work/stream_after.json"
run_bench prefill --workload synthetic --concurrency 1 --num-requests 3 --input-len 300 --output-len 1 --seed 7
run_bench decode16 --workload synthetic --concurrency 16 --num-requests 32 --input-len 16 --output-len 128 --seed 9
run_bench prefix_on --workload shared-prefix --num-prefixes 2 --prefix-len 600 --input-len 20 --output-len 16 \
  --concurrency 4 --num-requests 24 --seed 11
stop_server
start_server uncached --no-prefix-caching
run_bench prefix_off --workload shared-prefix --num-prefixes 2 --prefix-len 600 --input-len 20 --output-len 16 \
  --concurrency 4 --num-requests 24 --seed 11
stop_server

/usr/bin/python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
cfg = json.load(open(f"{work}/model/config.json"))
model_bytes = os.path.getsize(f"{work}/model/model.safetensors")
embed_params = cfg["vocab_size"] * cfg["hidden_size"]
params = model_bytes / 2  # bf16
body_params = params - embed_params  # one matmul pass per prompt token
ops = {b["name"]: b for b in json.load(open(f"{work}/ops.json"))["benchmarks"]}
# The machine's bandwidth drifts by up to 2x over minutes (shared host), so
# the bound is read next to the decode run it divides: the better of the two.
around = [json.load(open(f"{work}/stream_{w}.json"))["benchmarks"][0]["stream_GBps"] for w in ("before", "after")]
stream = max(around)
early = next(b["stream_GBps"] for n, b in ops.items() if n.startswith("BM_DecodeBandwidth"))
gemm = next(b["ours_GFLOPs"] for n, b in ops.items() if "M:512/bf16:1" in n)
r = {n: json.load(open(f"{work}/{n}.json"))["results"] for n in
     ["decode1", "prefill", "decode16", "prefix_on", "prefix_off"]}
decode_tps = 1000.0 / r["decode1"]["tpot_ms"]["p50"]
bound_tps = stream * 1e9 / model_bytes  # tied embeddings: lm_head reads the table once per token
prefill_tps = r["prefill"]["mean_prompt_tokens"] / (r["prefill"]["ttft_ms"]["p50"] / 1000.0)
prefill_bound = gemm * 1e9 / (2 * body_params)
agg = r["decode16"]["output_tokens_per_s"] / r["decode1"]["output_tokens_per_s"]
on, off = r["prefix_on"], r["prefix_off"]
print(f"model: {model_bytes/2**20:.0f} MiB bf16, {params/1e6:.0f}M params ({embed_params/1e6:.0f}M embedding, tied)")
print(f"streaming read {stream:.1f} GB/s around the decode run ({around[0]:.1f} before, {around[1]:.1f} after;"
      f" {early:.1f} at the start); bf16 GEMM (M=512, 4096^2) {gemm:.0f} GFLOP/s")
print(f"decode, batch 1:   {decode_tps:7.1f} tok/s  vs bandwidth bound {bound_tps:7.1f} tok/s  = {decode_tps/bound_tps:.2f}")
print(f"prefill ({r['prefill']['mean_prompt_tokens']:.0f} tok): {prefill_tps:7.0f} tok/s  vs GEMM bound {prefill_bound:7.0f} tok/s  = {prefill_tps/prefill_bound:.2f}")
print(f"16 streams: {r['decode16']['output_tokens_per_s']:.1f} output tok/s vs 1 stream {r['decode1']['output_tokens_per_s']:.1f} = {agg:.1f}x")
print(f"shared prefix ({on['mean_prompt_tokens']:.0f} prompt tok): TTFT p50 on {on['ttft_ms']['p50']:.0f} ms, off {off['ttft_ms']['p50']:.0f} ms"
      f" = {off['ttft_ms']['p50']/on['ttft_ms']['p50']:.1f}x; hit rate on {on['prefix_cache_hit_rate'] or 0:.2f}, off {off['prefix_cache_hit_rate'] or 0:.2f}")
PY
