#!/usr/bin/env bash
# Sets everything up, builds, and runs `omniserve up` on the demo model,
# serving the OpenAI API on 127.0.0.1 (port 8000 unless --port is given).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
exec "$root/build/omniserve" up "$@"
