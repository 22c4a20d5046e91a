#!/usr/bin/env python3
"""Reference for the vision decoder's sampler (goldens for models_test).

Written from the definition of diffusers' FlowMatchEulerDiscreteScheduler with
a static shift and from the Omni model's sampling loop (spec/omni-model.md,
"Vision decoder"), with numpy and torch, not from omniserve's C++:
  - construction: timesteps linspace(1, N, N) (float32) reversed, sigmas =
    timesteps / N, shifted: k s / (1 + (k - 1) s), in float32 torch ops;
    sigma_min is the last of them, sigma_max the first;
  - set_timesteps(steps): linspace(sigma_max N, sigma_min N, steps) / N in
    float64 numpy, shifted again, then float32, and a final 0;
  - the DiT's timestep int(sigma * 1000) / 1000 (sigma a float32 scalar);
  - Euler: x + (sigma_next - sigma) * v in float32;
  - autoguidance: p1 + g (p1 - p2) in float32.

Usage: /usr/bin/python3 tools/reference/flow_match_ref.py tests/data/vision_decoder
"""
import json
import os
import sys

import numpy as np
import torch


def sigmas_for(n, shift, steps):
    t = torch.from_numpy(np.linspace(1, n, n, dtype=np.float32)[::-1].copy()).to(torch.float32)
    s = t / n
    s = shift * s / (1 + (shift - 1) * s)
    sigma_min, sigma_max = s[-1].item(), s[0].item()
    ts = np.linspace(sigma_max * n, sigma_min * n, steps)
    x = ts / n
    x = shift * x / (1 + (shift - 1) * x)
    out = torch.cat([torch.from_numpy(x).to(torch.float32), torch.zeros(1)])
    return out


def main(out_dir):
    cases = []
    for n, shift in ((1000, 1.0), (1000, 3.0), (1000, 1.15)):
        for steps in (1, 25, 30, 50):
            sig = sigmas_for(n, shift, steps)
            cases.append({
                "num_train_timesteps": n,
                "shift": shift,
                "steps": steps,
                "sigmas": [float(v) for v in sig.tolist()],
                "dit_timesteps": [int(v * 1000) / 1000 for v in sig[:-1]],
            })
    # One Euler update with autoguidance on a small latent.
    rng = np.random.default_rng(17)
    shape = (16, 4, 6)
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    p1 = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    p2 = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    sig = sigmas_for(1000, 3.0, 25)
    g = 0.75
    pred = p1 + g * (p1 - p2)
    x_next = x + (sig[4] - sig[3]) * pred
    step = {
        "shape": list(shape), "g": g, "sigma": float(sig[3]), "sigma_next": float(sig[4]),
        "x": x.flatten().tolist(), "p1": p1.flatten().tolist(), "p2": p2.flatten().tolist(),
        "pred": pred.flatten().tolist(), "x_next": x_next.flatten().tolist(),
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "scheduler_golden.json"), "w") as f:
        json.dump({"torch": torch.__version__, "schedules": cases, "euler_step": step}, f)
    print(f"wrote {len(cases)} schedules and one Euler step to {out_dir}/scheduler_golden.json")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/vision_decoder")
