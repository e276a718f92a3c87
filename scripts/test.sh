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
# The browser tests (tests/browser) drive Debian's Chromium; Playwright's own download is
# never used (`playwright install` cannot reach its servers here).
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the browser tests"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# The zh-CN screenshots need a font with Simplified Chinese glyphs (Chromium draws boxes
# without one): WenQuanYi Micro Hei, the smallest Debian package that has them (1.6 MB).
if ! { command -v fc-list >/dev/null && fc-list :lang=zh-cn family | grep -q .; }; then
  echo "== installing a Simplified Chinese font (fonts-wqy-microhei) for the browser tests"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null
fi

echo "== ruff"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
echo "== mypy --strict"
.venv/bin/mypy
echo "== mypy over the tests (relaxed: [[tool.mypy.overrides]] for tests.*)"
.venv/bin/mypy --explicit-package-bases tests
echo "== layer contracts (docs/architecture.md)"
.venv/bin/lint-imports --no-cache --no-logo
.venv/bin/python tests/unit/layer_rules.py
# The quick benchmarks (a smoke run: they check that each benchmark still works; full
# figures: run them without --quick) run beside the browser tests, which leave the second
# core mostly idle; a failing one prints its output and fails the run.
BENCHMARKS=(
  bench/secrets_bench.py
  bench/secrets_detection.py
  bench/recall_latency.py
  bench/recall_cpu.py
  bench/recall_rankings.py
  bench/recall_end_to_end.py
  bench/recall_quality.py
  bench/recall_developer.py
  bench/review_quality.py
  bench/review_speed.py
  bench/sync_server.py
  bench/sync_traffic.py
  bench/storage_ops.py
  bench/sync_cost.py
  bench/sync_e2e.py
  bench/wire_models.py
  bench/extraction_pass.py
  bench/daemon_recall.py
  bench/hook_latency.py
  bench/capture_quality.py
  bench/mcp_startup.py
  bench/page_render.py
  bench/write_latency.py
)
bench_logs=$(mktemp -d)
run_benchmarks() {
  for bench in "${BENCHMARKS[@]}"; do
    log="$bench_logs/$(basename "$bench").log"
    if ! .venv/bin/python "$bench" --quick >"$log" 2>&1; then
      echo "FAILED $bench --quick:"
      cat "$log"
      return 1
    fi
    echo "ok  $bench --quick"
  done
}
echo "== benchmarks (quick smoke run, beside the browser tests)"
run_benchmarks >"$bench_logs/summary" 2>&1 &
bench_pid=$!
finish_benchmarks() {
  local status=0
  wait "$bench_pid" || status=$?
  cat "$bench_logs/summary"
  return "$status"
}
# Branch coverage ([tool.coverage] in pyproject.toml) on request: COVERAGE=1 bash scripts/test.sh.
# It nearly doubles the CPU time of the in-process tests, so the everyday run goes without it.
COV=()
if [ "${COVERAGE:-0}" = 1 ]; then
  rm -f .coverage .coverage.*
  COV=(--cov --cov-append --cov-report=term)
fi
echo "== pytest${COV:+ (with branch coverage)}"
if [ "$#" -gt 0 ]; then
  finish_benchmarks
  .venv/bin/python -m pytest ${COV[@]+"${COV[@]}"} "$@"
else
  # The browser tests in one process of their own (see docs/architecture.md), then the rest
  # on two workers (most tests wait on servers and subprocesses).
  browser_status=0
  .venv/bin/python -m pytest ${COV[@]+"${COV[@]}"} -q tests/browser || browser_status=$?
  finish_benchmarks
  [ "$browser_status" -eq 0 ] || exit "$browser_status"
  .venv/bin/python -m pytest -n 2 --dist loadfile ${COV[@]+"${COV[@]}"} --ignore=tests/browser
fi
