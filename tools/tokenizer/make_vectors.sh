#!/bin/sh
# Regenerates tests/data/tokenizer/. Run from the repository root after
# building make_demo_tokenizer:
#   tools/tokenizer/make_vectors.sh build-text/src/text/make_demo_tokenizer
set -eu
tool=${1:?path to the make_demo_tokenizer binary}
out=tests/data/tokenizer
# The fixture demo keeps 8 vision and 8 audio codes so the file stays small;
# the full ranges are tested in C++ against the builder itself.
"$tool" "$out/demo_tokenizer.json" 8 8
PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 tools/tokenizer/make_fixtures.py "$out"
for name in demo pairs bytelevel; do
  /usr/bin/python3 tools/tokenizer/ref_bpe.py "$out/${name}_tokenizer.json" tools/tokenizer/cases.json \
    "$out/${name}_vectors.json"
done
