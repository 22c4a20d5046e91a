#!/usr/bin/env python3
"""Independent PyTorch reference for HyperCLOVAXForCausalLM (and LLaMA).

Plain torch ops only (no transformers): reads config.json and model.safetensors
(with the small reader below), runs the forward pass in float32 from the bf16
weights, and writes golden logits and greedy continuations as JSON.

Numerics: activations are f32; the input of every projection is rounded to
bf16 before the matmul (what torch.autocast does on CPU and what omniserve's
packed bf16 Linear does), accumulation in f32. Attention, softmax, norms and
RoPE are f32. So the goldens differ from omniserve only by summation order.

Usage (the demo folders come from the C++ writer, so the weights are the
very bytes the C++ test regenerates):
  build/omniserve make-demo-model --component llm --preset llama-like --no-tokenizer --out /tmp/demo/llama_like
  build/omniserve make-demo-model --component llm --preset mup --no-tokenizer --out /tmp/demo/mup
  python3 tools/reference/hyperclovax_ref.py /tmp/demo/llama_like \
      tests/data/models/llama_like_golden.json
  python3 tools/reference/hyperclovax_ref.py /tmp/demo/mup \
      tests/data/models/mup_golden.json
"""
import hashlib
import json
import math
import struct
import sys

import torch

# Fixed prompts (token ids < 512). Lengths 5, 13 and 21: one inside a KV
# block, one just under a block, one past a block boundary.
PROMPTS = [
    [1, 17, 300, 42, 9],
    [1, 5, 77, 123, 200, 201, 202, 13, 400, 88, 31, 7, 250],
    [1, 499, 3, 64, 128, 256, 511, 100, 101, 102, 103, 11, 12, 13, 14, 15, 16, 300, 301, 302, 303],
]
GREEDY_STEPS = 8
FULL_LOGITS_PROMPT = 1  # this prompt stores the logits of every position

DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32, "F16": torch.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    return tensors, hashlib.sha256(data).hexdigest()


def inv_freq_for(cfg):
    dim = cfg["head_dim"]
    theta = cfg.get("rope_theta", 10000.0)
    inv = [1.0 / theta ** (2 * i / dim) for i in range(dim // 2)]
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    attention_scaling = 1.0
    if kind == "linear":
        inv = [f / scaling["factor"] for f in inv]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:
                out.append(f)
            elif wavelen > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        inv = out
    elif kind in ("default", "dynamic"):
        pass
    else:
        raise SystemExit(f"rope type {kind} not in the reference")
    return torch.tensor(inv, dtype=torch.float32), attention_scaling


class Reference:
    def __init__(self, folder):
        with open(f"{folder}/config.json") as f:
            self.cfg = json.load(f)
        with open(f"{folder}/config.json", "rb") as f:
            self.config_sha256 = hashlib.sha256(f.read()).hexdigest()
        self.w, self.weights_sha256 = read_safetensors(f"{folder}/model.safetensors")
        c = self.cfg
        self.hq, self.hkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.eps = c["rms_norm_eps"]
        self.emb_mult = c.get("embedding_multiplier", 1.0)
        self.attn_mult = c.get("attention_multiplier", 1.0 / math.sqrt(self.d))
        self.res_mult = c.get("residual_multiplier", 1.0)
        self.logits_scaling = c.get("logits_scaling", 1.0)
        self.post_norm = c.get("use_post_norm", False)
        self.inv_freq, self.rope_attention_scaling = inv_freq_for(c)

    def wt(self, name):
        return self.w[name].float()

    def linear(self, x, name):
        return x.to(torch.bfloat16).float() @ self.wt(name).t()

    def rms(self, x, name):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.wt(name)

    def rope(self, x, pos):  # x [T, H, D], NeoX rotate-half
        ang = pos.double()[:, None] * self.inv_freq.double()[None, :]
        emb = torch.cat([ang, ang], dim=-1)
        cos = (emb.cos() * self.rope_attention_scaling).float()[:, None, :]
        sin = (emb.sin() * self.rope_attention_scaling).float()[:, None, :]
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rot * sin

    def attention(self, x, p):
        t = x.shape[0]
        q = self.linear(x, p + "self_attn.q_proj.weight").view(t, self.hq, self.d)
        k = self.linear(x, p + "self_attn.k_proj.weight").view(t, self.hkv, self.d)
        v = self.linear(x, p + "self_attn.v_proj.weight").view(t, self.hkv, self.d)
        pos = torch.arange(t)
        q, k = self.rope(q, pos), self.rope(k, pos)
        group = self.hq // self.hkv
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * self.attn_mult
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        o = torch.einsum("hqk,khd->qhd", probs, v).reshape(t, self.hq * self.d)
        return self.linear(o, p + "self_attn.o_proj.weight")

    def mlp(self, x, p):
        g = self.linear(x, p + "mlp.gate_proj.weight")
        u = self.linear(x, p + "mlp.up_proj.weight")
        return self.linear(torch.nn.functional.silu(g) * u, p + "mlp.down_proj.weight")

    def forward(self, ids, trace=None):
        h = self.wt("model.embed_tokens.weight")[torch.tensor(ids)] * self.emb_mult
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            a = self.attention(self.rms(h, p + "input_layernorm.weight"), p)
            if self.post_norm:
                a = self.rms(a, p + "post_norm1.weight")
            h = h + self.res_mult * a
            m = self.mlp(self.rms(h, p + "post_attention_layernorm.weight"), p)
            if self.post_norm:
                m = self.rms(m, p + "post_norm2.weight")
            h = h + self.res_mult * m
            if trace is not None:
                trace[f"layers.{i}.out"] = h[-1].tolist()
        head = "model.embed_tokens.weight" if self.cfg["tie_word_embeddings"] else "lm_head.weight"
        return self.linear(self.rms(h, "model.norm.weight"), head) * self.logits_scaling


def rounded(values):
    return [float(f"{v:.7g}") for v in values]


def main():
    folder, out_path = sys.argv[1], sys.argv[2]
    torch.set_grad_enabled(False)
    ref = Reference(folder)
    prompts = []
    for n, ids in enumerate(PROMPTS):
        trace = {}
        logits = ref.forward(ids, trace)
        seq, margins = list(ids), []
        for _ in range(GREEDY_STEPS):
            last = ref.forward(seq)[-1]
            top2 = torch.topk(last, 2).values
            margins.append(float(top2[0] - top2[1]))
            seq.append(int(torch.argmax(last)))
        entry = {
            "ids": ids,
            "last_logits": rounded(logits[-1].tolist()),
            "greedy": seq[len(ids):],
            "greedy_margins": rounded(margins),
        }
        if n == FULL_LOGITS_PROMPT:
            entry["all_logits"] = [rounded(row.tolist()) for row in logits]
            entry["layer_outputs_last_token"] = {k: rounded(v) for k, v in trace.items()}
        prompts.append(entry)
        print(f"prompt {n}: greedy {entry['greedy']} min margin {min(margins):.4f} "
              f"max|logit| {float(logits.abs().max()):.3f}")
    golden = {
        "generator": "tools/reference/hyperclovax_ref.py",
        "config_sha256": ref.config_sha256,
        "weights_sha256": ref.weights_sha256,
        "prompts": prompts,
    }
    with open(out_path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
