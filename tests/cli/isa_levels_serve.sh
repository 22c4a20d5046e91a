#!/usr/bin/env bash
# `omniserve llm` starts and serves at every CPU kernel level this machine
# has (OMNI_CPU_ISA=generic .. best): a greedy chat completion answers 200
# with the requested tokens, the start-up log and /metrics name the level,
# and the answers of all levels are printed side by side. A level above the
# best falls back to the best with a warning in the log.
# Usage: tests/cli/isa_levels_serve.sh BUILD_DIR
set -euo pipefail
bin="$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)/omniserve"
work="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT

"$bin" make-demo-model --component llm --out "$work/model" >/dev/null
best="$("$bin" version | sed -n 's/^cpu kernels: .*(best \([a-z0-9]*\).*/\1/p')"
[[ -n "$best" ]] || { echo "omniserve version names no cpu kernel level" >&2; "$bin" version >&2; exit 1; }

start() {  # start LEVEL: omniserve llm with OMNI_CPU_ISA=LEVEL; sets $base
  OMNI_CPU_ISA="$1" "$bin" llm --model "$work/model" --served-model-name demo --host 127.0.0.1 --port 0 \
    >"$work/$1.log" 2>&1 &
  pid=$!
  local port=""
  for _ in $(seq 1 300); do
    port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/$1.log" | head -1 | sed 's/.*://' || true)"
    [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "$1: omniserve llm exited" >&2; cat "$work/$1.log" >&2; exit 1; }
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "$1: no /health" >&2; cat "$work/$1.log" >&2; exit 1; }
  base="http://127.0.0.1:$port"
}
stop() {
  kill "$pid"
  wait "$pid" || true
  pid=""
}

for level in generic avx2 avx512 avx512bf16 amx; do
  start "$level"
  expect="$level"
  if [[ "$level" == amx && "$best" != amx ]] || [[ "$level" == avx512bf16 && "$best" != avx512bf16 && "$best" != amx ]] ||
     [[ "$level" == avx512 && ( "$best" == generic || "$best" == avx2 ) ]] || [[ "$level" == avx2 && "$best" == generic ]]; then
    expect="$best"
    grep -q "OMNI_CPU_ISA=$level: this CPU has no $level" "$work/$level.log" ||
      { echo "$level: no fallback warning" >&2; cat "$work/$level.log" >&2; exit 1; }
  fi
  grep -q "cpu kernels: $expect (best $best" "$work/$level.log" ||
    { echo "$level: the log does not name level $expect" >&2; cat "$work/$level.log" >&2; exit 1; }
  # Whole, then searched: grep -q on a pipe would close it early and fail
  # curl under pipefail.
  metrics="$(curl -sf "$base/metrics")" || { echo "$level: no /metrics" >&2; exit 1; }
  grep -q "^omni_cpu_kernels_info{level=\"$expect\",best=\"$best\"" <<<"$metrics" ||
    { echo "$level: /metrics has no omni_cpu_kernels_info for $expect" >&2; exit 1; }
  answer="$(curl -sf "$base/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model":"demo","messages":[{"role":"user","content":"Say something."}],"max_tokens":12,"temperature":0,"ignore_eos":true}')" ||
    { echo "$level: chat completion failed" >&2; cat "$work/$level.log" >&2; exit 1; }
  tokens="$(printf '%s' "$answer" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["completion_tokens"])')"
  [[ "$tokens" == 12 ]] || { echo "$level: $tokens completion tokens, expected 12: $answer" >&2; exit 1; }
  echo "$level (runs $expect): 200, 12 tokens: $(printf '%s' "$answer" | /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["choices"][0]["message"]["content"]))')"
  stop
done
