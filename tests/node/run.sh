#!/usr/bin/env bash
# Runs a suite of the OpenAI Node client against an omniserve binary:
#   tests/node/run.sh [path/to/omniserve] [suite.mjs]
# (defaults: build/omniserve and tests/node/openai.test.mjs; tests/e2e uses
# it for tests/e2e/e2e.test.mjs).
# Needs node >= 20 and `npm ci` in the repository root; a missing client is a
# failure, not a skip.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
binary="${1:-${OMNISERVE_BINARY:-$root/build/omniserve}}"
suite="${2:-tests/node/openai.test.mjs}"
if ! command -v node >/dev/null; then
  echo "run.sh: node is not installed" >&2
  exit 1
fi
if [[ ! -f "$root/node_modules/openai/package.json" ]]; then
  echo "run.sh: $root/node_modules/openai is missing; run \`npm ci\` in $root" >&2
  exit 1
fi
cd "$root"
OMNISERVE_BINARY="$(realpath "$binary")" exec node --test --test-reporter=spec "$suite"
