#!/usr/bin/env bash
# Install everything the tests need into .venv, check style and types, run the whole suite.
# Usage: bash scripts/test.sh [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,server,s3]'

echo "== ruff"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
echo "== mypy --strict"
.venv/bin/mypy
echo "== benchmarks (quick smoke run; full figures: run them without --quick)"
for bench in bench/secrets_bench.py bench/recall_latency.py bench/recall_end_to_end.py \
  bench/recall_quality.py \
  bench/sync_server.py bench/sync_traffic.py bench/daemon_recall.py bench/hook_latency.py \
  bench/mcp_startup.py; do
  .venv/bin/python "$bench" --quick >/dev/null
  echo "ok  $bench --quick"
done
echo "== pytest"
.venv/bin/python -m pytest "$@"
