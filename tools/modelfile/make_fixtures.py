#!/usr/bin/env python3
"""Writes the small safetensors fixtures under tests/data/modelfile and the
seed corpus under fuzz/corpus/safetensors.

Independent of omniserve's C++ code: a minimal writer that follows the
published safetensors format (https://github.com/huggingface/safetensors,
README "Format", and the reference `serialize`): 8-byte little-endian header
length, compact JSON header with "__metadata__" first, tensors ordered by
dtype (the reference Dtype enum, descending) then name, header padded with
spaces to a multiple of 8, data back to back. Standard library only, so it
runs anywhere; the outputs are committed and the C++ tests need no Python.

Usage: python3 tools/modelfile/make_fixtures.py   (from the repository root)
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "modelfile")
CORPUS = os.path.join(ROOT, "fuzz", "corpus", "safetensors")

# Position in the reference implementation's Dtype enum.
DTYPE_RANK = {"BOOL": 0, "U8": 1, "I8": 2, "F8_E5M2": 3, "F8_E4M3": 4, "I16": 5, "U16": 6,
              "F16": 7, "BF16": 8, "I32": 9, "U32": 10, "F32": 11, "F64": 12, "I64": 13, "U64": 14}


def bf16_bytes(values):
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, f"{v} is not exact in bf16"
        out += struct.pack("<H", bits >> 16)
    return out


def encode(dtype, values):
    fmt = {"F32": "f", "F16": "e", "I32": "i", "I64": "q", "U8": "B", "F64": "d", "I8": "b"}
    if dtype == "BF16":
        return bf16_bytes(values)
    return struct.pack("<" + fmt[dtype] * len(values), *values)


def serialize(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    order = sorted(tensors, key=lambda t: (-DTYPE_RANK[t[1]], t[0].encode("utf-8")))
    header = {}
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    offset = 0
    data = b""
    for name, dtype, shape, raw in order:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(blob)


# Every dtype, with values the C++ test checks one by one.
ALL_DTYPES = [
    ("f32", "F32", [2, 3], encode("F32", [0.0, 1.0, -2.5, 3.25, 1024.0, -0.125])),
    ("bf16", "BF16", [2, 2], encode("BF16", [1.0, -2.0, 0.5, 3.0])),
    ("f16", "F16", [3], encode("F16", [1.0, -0.5, 65504.0])),
    ("i32", "I32", [2, 2], encode("I32", [1, -2, 2147483647, -2147483648])),
    ("i64", "I64", [2], encode("I64", [1 << 40, -3])),
    ("u8", "U8", [5], encode("U8", [0, 1, 127, 128, 255])),
    ("scalar", "F32", [], encode("F32", [42.0])),
    ("empty", "F32", [0, 4], b""),
    ("name \"quoted\"\tü", "U8", [1], encode("U8", [7])),
]
ALL_DTYPES_METADATA = {"format": "pt", "note": "line\nbreak"}


def ramp(n, scale=1.0):
    # small integers and halves: exact in bf16 and f32
    return [((i % 9) - 4) * 0.5 * scale for i in range(n)]


def llama_tensors():
    h, v, inter = 4, 8, 6
    t = [("model.embed_tokens.weight", "BF16", [v, h], encode("BF16", ramp(v * h)))]
    for p, shape in [("self_attn.q_proj", [h, h]), ("self_attn.k_proj", [2, h]),
                     ("self_attn.v_proj", [2, h]), ("self_attn.o_proj", [h, h]),
                     ("mlp.gate_proj", [inter, h]), ("mlp.up_proj", [inter, h]),
                     ("mlp.down_proj", [h, inter])]:
        n = shape[0] * shape[1]
        t.append((f"model.layers.0.{p}.weight", "BF16", shape, encode("BF16", ramp(n, 2.0))))
    t.append(("model.layers.0.input_layernorm.weight", "F32", [h], encode("F32", [1.0] * h)))
    t.append(("model.layers.0.post_attention_layernorm.weight", "F32", [h], encode("F32", [1.0] * h)))
    t.append(("model.norm.weight", "F32", [h], encode("F32", [1.0, 2.0, 3.0, 4.0])))
    t.append(("lm_head.weight", "BF16", [v, h], encode("BF16", ramp(v * h, -1.0))))
    return t


LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 8,
    "hidden_size": 4, "intermediate_size": 6, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "max_position_embeddings": 64, "tie_word_embeddings": False, "bos_token_id": 1,
    "eos_token_id": 2, "torch_dtype": "bfloat16",
}


def main():
    write(os.path.join(DATA, "all_dtypes.safetensors"), serialize(ALL_DTYPES, ALL_DTYPES_METADATA))
    write(os.path.join(DATA, "empty.safetensors"), serialize([]))

    tensors = llama_tensors()
    single = os.path.join(DATA, "llama_single")
    write(os.path.join(single, "model.safetensors"), serialize(tensors, {"format": "pt"}))
    write(os.path.join(single, "config.json"), json.dumps(LLAMA_CONFIG, indent=2).encode() + b"\n")

    # Two shards split by name, as transformers' save_pretrained does.
    sharded = os.path.join(DATA, "llama_sharded")
    shards = {"model-00001-of-00002.safetensors": [t for t in tensors if t[0].startswith("model.")],
              "model-00002-of-00002.safetensors": [t for t in tensors if not t[0].startswith("model.")]}
    weight_map, total = {}, 0
    for fname, ts in shards.items():
        write(os.path.join(sharded, fname), serialize(ts, {"format": "pt"}))
        for name, _, _, raw in ts:
            weight_map[name] = fname
            total += len(raw)
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    write(os.path.join(sharded, "model.safetensors.index.json"),
          json.dumps(index, indent=2).encode() + b"\n")
    write(os.path.join(sharded, "config.json"), json.dumps(LLAMA_CONFIG, indent=2).encode() + b"\n")

    # Seed corpus: valid files of each shape of header, and near-misses.
    seeds = {
        "all_dtypes": serialize(ALL_DTYPES, ALL_DTYPES_METADATA),
        "empty": serialize([]),
        "metadata_only": serialize([], {"k": "v"}),
        "one_f32": serialize([("w", "F32", [2], encode("F32", [1.0, 2.0]))]),
        "unpadded": struct.pack("<Q", 2) + b"{}",
        "escapes": struct.pack("<Q", 64) + b'{"a\\u00e9\\ud83d\\ude00\\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'.ljust(64) + b"\x05",
        "gap": struct.pack("<Q", 56) + b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'.ljust(56) + b"\x00\x01",
        "overlap": struct.pack("<Q", 112) + (b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                             b'"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}').ljust(112) + b"\x00\x01",
        "f64_unsupported": serialize([("d", "F64", [1], encode("F64", [1.0]))]),
        "bad_json": struct.pack("<Q", 8) + b'{"a":}  ',
        "huge_header_len": struct.pack("<Q", 1 << 62) + b"{}",
        "shape_overflow": struct.pack("<Q", 88) + b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'.ljust(88),
    }
    for name, blob in seeds.items():
        write(os.path.join(CORPUS, name), blob)


if __name__ == "__main__":
    main()
