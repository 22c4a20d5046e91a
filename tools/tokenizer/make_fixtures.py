#!/usr/bin/python3
"""Writes the hand-made tokenizer.json fixtures and the test cases.

pairs_tokenizer.json: merges as [a, b] pairs; pre_tokenizer Sequence of
  Split(String "\n", MergedWithPrevious), Split(Regex, Isolated), ByteLevel
  (use_regex false); added tokens special and non-special.
bytelevel_tokenizer.json: merges as "a b" strings; pre_tokenizer ByteLevel
  alone (add_prefix_space, use_regex); ignore_merges; an lstrip/rstrip token.

The merges are hand-picked words merged left to right byte by byte, plus a
few pairs of common English pieces. Usage: make_fixtures.py OUT_DIR
"""
import json
import os
import sys

from ref_bpe import BYTE_ENCODER


def bl(raw):
    return "".join(BYTE_ENCODER[b] for b in raw.encode("utf-8"))


def build(words, extra_pairs):
    vocab = {BYTE_ENCODER[b]: b for b in range(256)}
    merges = []

    def add(a, b):
        if (a, b) in merges:
            return
        assert a in vocab and b in vocab, (a, b)
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))

    for a, b in extra_pairs:
        add(bl(a), bl(b))
    for w in words:
        chars = list(bl(w))
        cur = chars[0]
        for c in chars[1:]:
            add(cur, c)
            cur += c
    return vocab, merges


def added(tid, content, special, lstrip=False, rstrip=False, normalized=None):
    return {"id": tid, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def main():
    out_dir = sys.argv[1]
    words = ["Hello", " world", " the", " tokenizer", " 123", "123", " 안녕", "하세요", " 서울", "ing", " is",
             "\n\n", "  ", " 😀", "'s"]
    pairs = [(" ", "t"), ("h", "e"), (" t", "he"), ("i", "n"), ("e", "r"), ("o", "n"), (" ", "a"), ("r", "e")]
    vocab, merges = build(words, pairs)
    n = len(vocab)
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(n, "<|im_start|>", True), added(n + 1, "<|im_end|>", True),
                         added(n + 2, "<tool_call>", False), added(n + 3, "<|im_start|>x", True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "\n"}, "behavior": "MergedWithPrevious", "invert": False},
            {"type": "Split", "pattern": {"Regex": r" ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    with open(os.path.join(out_dir, "pairs_tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")

    vocab, merges = build(["Hello", " world", " the", " you", "'re", " 12", " 안녕"], pairs)
    vocab[bl(" omniserve")] = len(vocab)  # reachable only through ignore_merges
    n = len(vocab)
    doc = {
        "version": "1.0",
        "added_tokens": [added(n, "<|endoftext|>", True), added(n + 1, "[MASK]", True, lstrip=True, rstrip=True),
                         added(n + 2, "<tool_call>", False)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    with open(os.path.join(out_dir, "bytelevel_tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
