#!/usr/bin/env bash
# The vision decoder's numbers for docs/PERFORMANCE.md, one run:
#   bench/vision_decoder/run.sh [build-dir] [reps]
# 1. vision_decoder_bench on the `bench` preset (DiT 1920 wide, 24 heads,
#    2 of the released 35 blocks; the real VAE) at 656x880 (9020 latent
#    tokens): this machine's bf16 GEMM rate, one DiT forward and its fraction
#    of that rate, the per-block time and the 35-block projection, one step
#    with autoguidance, the VAE, the latency at 25 and 50 steps, and --sp 2
#    over --sp 1 with one compute thread per rank (all-to-all measured,
#    projection to 4 and 8 ranks).
# 2. PyTorch (Debian's python3-torch, with libopenblas0-pthread) on the same
#    weights, bf16 and f32, at the same thread count and at 1 thread (for
#    one rank): bench/vision_decoder/torch_dit.py.
# 3. A summary with the ratios.
# reps (default 2): best of that many after a warm-up; the 1-thread PyTorch
# run is one forward without a warm-up. Takes 15-30 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
reps="${2:-2}"
use_workdir
threads="$(nproc)"
grep -m1 'model name' /proc/cpuinfo
echo "threads: $threads"

"$build/omniserve" make-demo-model --component vd --preset bench --out "$work/vd" >/dev/null
"$build/bench/vision_decoder/vision_decoder_bench" "$work/vd" "$reps" | tee "$work/cpp.txt"
/usr/bin/python3 "$(dirname "$0")/torch_dit.py" "$work/vd" "$threads" "$reps" | tee "$work/torch.json"
/usr/bin/python3 "$(dirname "$0")/torch_dit.py" "$work/vd" 1 0 | tee "$work/torch1.json"

/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
c = json.loads(next(l for l in open(f"{work}/cpp.txt") if l.startswith("JSON "))[5:])
t = json.loads(open(f"{work}/torch.json").read())
t1 = json.loads(open(f"{work}/torch1.json").read())
best = min(t["bf16_s"], t["f32_s"])
best1 = min(t1["bf16_s"], t1["f32_s"])
print("\n== summary ==")
print(f"DiT forward ({c['tokens']} tokens, 2 blocks), {c['threads']} threads: {c['dit_forward_s']:.2f} s, "
      f"{c['dit_gflops']:.0f} GFLOP/s = {c['fraction_of_gemm']:.2f} of the bf16 GEMM rate ({c['gemm_gflops']:.0f} GFLOP/s)")
print(f"  with v made contiguous (Ulysses, group of one): {c['contiguous_v_s']:.2f} s "
      f"({c['dit_forward_s'] / c['contiguous_v_s']:.2f}x the plain forward)")
print(f"  PyTorch {t['torch']} same weights, {t['threads']} threads: bf16 {t['bf16_s']:.2f} s, f32 {t['f32_s']:.2f} s "
      f"-> omniserve {best / c['dit_forward_s']:.2f}x faster than its best")
print(f"  1 thread: omniserve {c['sp1_s']:.2f} s, PyTorch bf16 {t1['bf16_s']:.2f} s, f32 {t1['f32_s']:.2f} s "
      f"-> {best1 / c['sp1_s']:.2f}x")
print(f"per block {c['block_s']:.2f} s, outside the blocks {c['outside_blocks_s']:.2f} s; 35-block forward "
      f"{c['real_forward_s']:.1f} s")
print(f"step with autoguidance {c['step_s']:.2f} s; condition {c['condition_s']:.3f} s; VAE {c['vae_s']:.2f} s")
print(f"latency (bench preset): 25 steps {c['latency_25_s']:.0f} s, 50 steps {c['latency_50_s']:.0f} s "
      f"({c['latency_50_s'] / c['latency_25_s']:.2f}x)")
print(f"latency (35 blocks, projected): step {c['real_step_s']:.1f} s; 25 steps {c['real_latency_25_s']:.0f} s, "
      f"50 steps {c['real_latency_50_s']:.0f} s ({c['real_latency_50_s'] / c['real_latency_25_s']:.2f}x)")
print(f"sp 2 over sp 1 (1 compute thread per rank): {c['sp1_s'] / c['sp2_s']:.2f}x (sp 1 plain {c['sp1_s']:.2f} s), "
      f"{c['sp1_ulysses_s'] / c['sp2_s']:.2f}x of sp 1 through Ulysses ({c['sp1_ulysses_s']:.2f} s); target >= 1.7x")
print(f"  sp 2: {c['sp2_s']:.2f} s = compute {c['sp2_compute_s']:.2f} s + all-to-all {c['sp2_all_to_all_s']:.3f} s "
      f"({c['sp2_all_to_all_s'] / c['sp2_s']:.1%}); {c['sp2_bytes_sent'] / 1e6:.0f} MB sent per rank; "
      f"bare exchange {c['exchange_gbs']:.2f} GB/s")
for n in (2, 4, 8):
    p = c[f"projected_{n}_s"]
    print(f"  projected sp {n}: {p:.2f} s ({c['sp1_ulysses_s'] / n:.2f} compute + {c[f'comm_{n}_s']:.3f} all-to-all) = "
          f"{c['sp1_ulysses_s'] / p:.2f}x of sp 1 through Ulysses")
PY
