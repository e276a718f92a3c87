#!/usr/bin/env bash
# Install oharness into .venv and walk through the memory CLI on a temporary project
# (with a temporary OHARNESS_HOME, so nothing of yours is touched).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet -e .
OH="$REPO/.venv/bin/oharness"
PY="$REPO/.venv/bin/python"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OHARNESS_HOME="$WORK/home"
mkdir -p "$WORK/shop" && cd "$WORK/shop"

run() { printf '\n$ %s\n' "$*"; "$@"; }
first_id() { "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'][0]['$2'])"; }

run "$OH" project init
run "$OH" memory remember --type feedback --tags "design, pricing" \
  --summary "Pricing cards use fills, not borders" \
  --body $'Cards on the pricing page are separated by fill and whitespace.\n\n**Why:** the outlines were the loudest thing on a page of numbers.'
run "$OH" memory remember --type user --summary "Prefers short answers with code first" \
  --body "Lead with the code change, then one or two sentences of why."
echo "Deploys go out on Tuesdays at noon; hotfixes any day. See [[release-checklist]]." |
  run "$OH" memory remember --type project --tags release --summary "Deploys happen on Tuesdays"
run "$OH" memory list
ID=$("$OH" memory list --json | first_id notes id)
run "$OH" memory show "$ID"
run "$OH" memory forget "$ID" --yes
run "$OH" memory backups
BACKUP=$("$OH" memory backups --json | first_id backups backupId)
run "$OH" memory restore "$BACKUP"
run "$OH" memory doctor
printf '\nNotes are plain Markdown files:\n'
ls "$WORK/shop/MEMORY" "$OHARNESS_HOME/memory/user"
