#!/bin/sh
# Runs the ops benchmarks once and prints their ratio counters in a table:
#   bench/ops/run.sh [build-dir] [extra ops_bench flags]
# overhead_pct (Linear vs direct oneDNN), fraction_of_stream (M=1 bf16 Linear
# bandwidth / streaming-read bandwidth) and tokens_per_s (causal attention).
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
exec "$build/bench/ops/ops_bench" --benchmark_counters_tabular=true "$@"
