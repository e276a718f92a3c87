#!/usr/bin/env bash
# Install oharness into .venv and walk through the memory CLI on a temporary project
# (with a temporary OHARNESS_HOME, so nothing of yours is touched).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet -e '.[server]'
OH="$REPO/.venv/bin/oharness"
PY="$REPO/.venv/bin/python"

WORK=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
export OHARNESS_HOME="$WORK/home"
mkdir -p "$WORK/shop" && cd "$WORK/shop"

# Echo a command the way it can be copied into a shell (quoted), then run it.
run() {
  local shown=("$@") line="" arg
  [ "${shown[0]}" = "$OH" ] && shown[0]=oharness
  for arg in "${shown[@]}"; do
    if [[ "$arg" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then line+="$arg "; else line+="${arg@Q} "; fi
  done
  printf '\n$ %s\n' "${line% }"
  "$@"
}
first_id() { "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'][0]['$2'])"; }

run "$OH" project init
run "$OH" memory remember --type feedback --tags "design, pricing" \
  --summary "Pricing cards use fills, not borders" \
  --body $'Cards on the pricing page are separated by fill and whitespace.\n\n**Why:** the outlines were the loudest thing on a page of numbers.'
run "$OH" memory remember --type user --summary "Prefers short answers with code first" \
  --body "Lead with the code change, then one or two sentences of why."
run "$OH" memory remember --type project --tags release --summary "Deploys happen on Tuesdays" \
  --body "Deploys go out on Tuesdays at noon; hotfixes any day. See [[release-checklist]]."
run "$OH" memory list
ID=$("$OH" memory list --json | first_id notes id)
run "$OH" memory show "$ID"
run "$OH" memory forget "$ID" --yes
run "$OH" memory backups
BACKUP=$("$OH" memory backups --json | first_id backups backupId)
run "$OH" memory restore "$BACKUP"
run "$OH" memory doctor
run "$OH" memory search "pricing borders"
run "$OH" memory recall "When do we deploy to production?"
run "$OH" memory index
printf '\nNotes are plain Markdown files:\n'
ls "$WORK/shop/MEMORY" "$OHARNESS_HOME/memory/user"

printf '\n== Sync to a second machine through a local sync server\n'
export OHARNESS_SYNC_JWT_SECRET="quickstart-secret-$(date +%s)-0123456789abcdef"
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$OH" sync-server serve --storage "file://$WORK/cloud" --port "$PORT" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  "$PY" -c "import httpx2,sys; sys.exit(httpx2.get('http://127.0.0.1:$PORT/healthz').status_code!=200)" 2>/dev/null && break
  sleep 0.1
done
TOKEN=$("$OH" sync-server token --user demo --plan paid)
login() { printf '\n$ oharness login --origin http://127.0.0.1:%s --token …\n' "$PORT"; "$OH" login --origin "http://127.0.0.1:$PORT" --token "$TOKEN"; }
login
run "$OH" sync now
printf '\nThe shop folder is not a git repository, so its project id is random: a copy of the\n'
printf 'folder on another machine is the same project once it holds the same .oharness/project.json\n'
printf '(a git repository needs nothing: its id comes from its first commit).\n'
cd "$WORK"
run mkdir -p laptop/.oharness
run cp shop/.oharness/project.json laptop/.oharness/project.json
cd "$WORK/laptop"
export OHARNESS_HOME="$WORK/laptop-home"
login
run "$OH" sync now
run "$OH" memory list
