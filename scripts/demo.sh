#!/usr/bin/env bash
# Install oharness into .venv and start `oharness demo`: the Memory page on a sample project in
# a temporary home, with its own sync server and a second device (docs/demo.md). Ctrl-C stops
# it and removes the temporary home. Arguments go to `oharness demo` (--port N, --no-open, …).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet -e '.[server]'
exec .venv/bin/oharness demo "$@"
