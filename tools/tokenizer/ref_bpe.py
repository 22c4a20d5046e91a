#!/usr/bin/python3
"""An independent reference byte-level BPE tokenizer, for test vectors.

Written from the published algorithm (GPT-2's bytes_to_unicode and rank-based
merge loop, Hugging Face's tokenizer.json semantics for added tokens, Split
and ByteLevel pre-tokenizers), in plain Python with the `regex` module
(Debian: python3-regex). It shares no code with src/text/ and deliberately
uses different techniques (regex alternation for added tokens, the textbook
"merge every occurrence of the best pair" loop over strings).

Usage: ref_bpe.py TOKENIZER_JSON CASES_JSON OUT_JSON
"""
import json
import sys

import regex

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) +
            list(range(ord("\xae"), ord("\xff") + 1)))
    table = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return table


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}


def split_pieces(text, pattern, behavior, invert):
    """Hugging Face Split semantics over one string."""
    segs = []
    pos = 0
    for m in pattern.finditer(text):
        if m.end() == m.start():
            continue
        if m.start() > pos:
            segs.append([text[pos:m.start()], invert])
        segs.append([m.group(0), not invert])
        pos = m.end()
    if pos < len(text):
        segs.append([text[pos:], invert])
    out = []
    if behavior == "Removed":
        out = [s for s, is_m in segs if not is_m]
    elif behavior == "Isolated":
        out = [s for s, _ in segs]
    elif behavior == "MergedWithPrevious":
        prev = False
        for s, is_m in segs:
            if is_m and not prev and out:
                out[-1] += s
            else:
                out.append(s)
            prev = is_m
    elif behavior == "MergedWithNext":
        prev = False
        for s, is_m in reversed(segs):
            if is_m and not prev and out:
                out[-1] = s + out[-1]
            else:
                out.append(s)
            prev = is_m
        out.reverse()
    elif behavior == "Contiguous":
        prev = None
        for s, is_m in segs:
            if prev is not None and is_m == prev:
                out[-1] += s
            else:
                out.append(s)
            prev = is_m
    else:
        raise ValueError(behavior)
    return [s for s in out if s]


class RefTokenizer:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        model = doc["model"]
        assert model.get("type", "BPE") == "BPE"
        self.vocab = dict(model["vocab"])
        self.ignore_merges = bool(model.get("ignore_merges", False))
        self.ranks = {}
        for rank, m in enumerate(model["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            self.ranks.setdefault((a, b), rank)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.special_ids = set()
        raw, norm, raw_plain, norm_plain = [], [], [], []
        for t in doc.get("added_tokens") or []:
            self.vocab[t["content"]] = t["id"]
            self.id_to_token[t["id"]] = t["content"]
            if t.get("special"):
                self.special_ids.add(t["id"])
            entry = (t["content"], t["id"], t.get("lstrip", False), t.get("rstrip", False))
            normalized = t.get("normalized", not t.get("special", False))
            (norm if normalized else raw).append(entry)
            if not t.get("special"):
                (norm_plain if normalized else raw_plain).append(entry)
        self.matchers = {True: (self._alternation(raw), self._alternation(norm)),
                         False: (self._alternation(raw_plain), self._alternation(norm_plain))}
        self.steps = []
        self._read_pre(doc.get("pre_tokenizer"))

    @staticmethod
    def _alternation(entries):
        if not entries:
            return None
        # Longest first: regex alternation then finds the leftmost-longest token.
        entries = sorted(entries, key=lambda e: -len(e[0].encode("utf-8")))
        info = {e[0]: e for e in entries}
        return regex.compile("|".join(regex.escape(e[0]) for e in entries)), info

    def _read_pre(self, node):
        if node is None:
            return
        kind = node["type"]
        if kind == "Sequence":
            for p in node["pretokenizers"]:
                self._read_pre(p)
        elif kind == "Split":
            pat = node["pattern"]
            src = pat["Regex"] if "Regex" in pat else regex.escape(pat["String"])
            self.steps.append(("split", regex.compile(src), node["behavior"], node.get("invert", False)))
        elif kind == "ByteLevel":
            gpt2 = regex.compile(GPT2_PATTERN) if node.get("use_regex", True) else None
            self.steps.append(("bytelevel", node.get("add_prefix_space", False), gpt2))
        else:
            raise ValueError(kind)

    def _find_added(self, text, matcher):
        """[(start, end, id)] non-overlapping, with lstrip/rstrip applied."""
        if matcher is None:
            return []
        pattern, info = matcher
        out = []
        prev_end = 0
        pos = 0
        while True:
            m = pattern.search(text, pos)
            if m is None:
                break
            _, tid, lstrip, rstrip = info[m.group(0)]
            s, e = m.start(), m.end()
            if lstrip:
                while s > prev_end and text[s - 1] in " \t\n\r\f\v":
                    s -= 1
            if rstrip:
                while e < len(text) and text[e] in " \t\n\r\f\v":
                    e += 1
            out.append((s, e, tid))
            prev_end = pos = e
        return out

    def pre_tokenize(self, text):
        pieces = [text]
        for step in self.steps:
            nxt = []
            for p in pieces:
                if step[0] == "split":
                    nxt.extend(split_pieces(p, step[1], step[2], step[3]))
                else:
                    if step[1] and not p.startswith(" "):
                        p = " " + p
                    nxt.extend(split_pieces(p, step[2], "Isolated", False) if step[2] else [p])
            pieces = nxt
        return pieces

    def bpe(self, word):
        if self.ignore_merges and word in self.vocab:
            return [word]
        parts = list(word)
        while len(parts) > 1:
            best = None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best):
                    best = r
            if best is None:
                break
            merged = []
            i = 0
            while i < len(parts):
                if i + 1 < len(parts) and self.ranks.get((parts[i], parts[i + 1])) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def _encode_plain(self, text, ids):
        if not text:
            return
        pieces = self.pre_tokenize(text) if self.steps else [text]
        for p in pieces:
            word = "".join(BYTE_ENCODER[b] for b in p.encode("utf-8"))
            ids.extend(self.vocab[t] for t in self.bpe(word))

    def _encode_gap(self, text, matcher, ids):
        pos = 0
        for s, e, tid in self._find_added(text, matcher):
            self._encode_plain(text[pos:s], ids)
            ids.append(tid)
            pos = e
        self._encode_plain(text[pos:], ids)

    def encode(self, text, parse_special=True):
        raw, norm = self.matchers[parse_special]
        ids = []
        pos = 0
        for s, e, tid in self._find_added(text, raw):
            self._encode_gap(text[pos:s], norm, ids)
            ids.append(tid)
            pos = e
        self._encode_gap(text[pos:], norm, ids)
        return ids

    def decode(self, ids, skip_special=False):
        out = bytearray()
        for i in ids:
            if skip_special and i in self.special_ids:
                continue
            tok = self.id_to_token[i]
            if all(c in BYTE_DECODER for c in tok):
                out.extend(BYTE_DECODER[c] for c in tok)
            else:
                out.extend(tok.encode("utf-8"))
        return out.decode("utf-8", errors="replace")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tok = RefTokenizer(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        cases = json.load(f)
    vectors = []
    for text in cases:
        ids = tok.encode(text)
        vectors.append({
            "text": text,
            "ids": ids,
            "ids_no_special": tok.encode(text, parse_special=False),
            "decoded": tok.decode(ids),
            "decoded_skip_special": tok.decode(ids, skip_special=True),
        })
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        json.dump({"tokenizer": sys.argv[1].split("/")[-1], "vectors": vectors}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
