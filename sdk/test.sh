#!/usr/bin/env bash
# Runs the five client libraries' suites (pytest, node --test, PHPUnit, go test, minitest) at once against a
# real `posthorn serve` on a fresh database, and exits non-zero if any fails.
#   POSTHORN_BIN                 the server binary
#   POSTHORN_TEST_DATABASE_URL   an admin URL; a database is created on it and dropped after
# Installs what is missing (idempotently): PHP and PHPUnit from apt, a venv under
# sdk/python/.venv, sdk/typescript/node_modules. Nothing global besides the apt packages.
set -euo pipefail

SDK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${POSTHORN_BIN:?POSTHORN_BIN must name the posthorn server binary}"
: "${POSTHORN_TEST_DATABASE_URL:?POSTHORN_TEST_DATABASE_URL must be an admin database URL}"
POSTHORN_BIN="$(cd "$(dirname "$POSTHORN_BIN")" && pwd)/$(basename "$POSTHORN_BIN")"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  log "installing $* (apt)"
  as_root apt-get install -y "$@" >/dev/null 2>&1 || { as_root apt-get update >/dev/null && as_root apt-get install -y "$@" >/dev/null; }
}

# --- tools -----------------------------------------------------------------------------
ensure_tools() {
  command -v psql >/dev/null || apt_install postgresql-client
  command -v curl >/dev/null || apt_install curl
  # posthorn listen's test through a TLS-terminating load balancer.
  command -v haproxy >/dev/null || apt_install haproxy
  command -v openssl >/dev/null || apt_install openssl
  if ! command -v php >/dev/null || ! command -v phpunit >/dev/null || ! php -m | grep -qx curl || ! php -m | grep -qx mbstring; then
    apt_install php-cli php-curl php-mbstring php-xml phpunit
  fi
  command -v python3 >/dev/null || apt_install python3 python3-venv
  local venv="$SDK/python/.venv"
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    python3 -m venv "$venv" || { apt_install python3-venv; rm -rf "$venv"; python3 -m venv "$venv"; }
  fi
  "$venv/bin/python" -c "import pytest, standardwebhooks, flask, cryptography" 2>/dev/null \
    || "$venv/bin/pip" install -q "pytest>=7" "standardwebhooks==1.0.0" "flask>=2.2" "cryptography>=2.6"
  # The package itself, as users install it (reinstalled each run: it is small).
  "$venv/bin/pip" install -q --no-deps --force-reinstall "$SDK/python" >/dev/null
  command -v node >/dev/null || apt_install nodejs npm
  if [ ! -d "$SDK/typescript/node_modules/typescript" ] || [ ! -d "$SDK/typescript/node_modules/express" ]; then
    log "installing the TypeScript package's dev dependencies (npm ci)"
    (cd "$SDK/typescript" && npm ci --no-audit --no-fund >/dev/null)
  fi
  # Ruby's suite runs on minitest, which Debian's Ruby 3.1 bundles (ruby-minitest if not).
  command -v ruby >/dev/null || apt_install ruby
  ruby -e 'require "minitest"' 2>/dev/null || apt_install ruby-minitest
  command -v go >/dev/null || apt_install golang-go
  # The Go module uses the standard library only: nothing is fetched (only apt may be
  # reachable), and the build cache lives in the user's home, not in the tree.
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off
  export GOCACHE="${GOCACHE:-${HOME:-/tmp}/.cache/go-build}" GOPATH="${GOPATH:-${HOME:-/tmp}/go}"
}

# --- the server ------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/posthorn-sdk-test.XXXXXX")"
DB="posthorn_sdk_$$_$RANDOM"
SERVER_PID=""
PIDS=()
cleanup() {
  local code=$?
  for pid in "${PIDS[@]}" $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}" $SERVER_PID; do wait "$pid" 2>/dev/null || true; done
  psql "$POSTHORN_TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$WORK" "$SDK"/typescript/test/.tmp-* "$SDK"/python/build
  exit "$code"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_server() {
  export DATABASE_URL
  DATABASE_URL="$(python3 - "$POSTHORN_TEST_DATABASE_URL" "$DB" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(urllib.parse.urlunsplit(u._replace(path="/" + sys.argv[2])))
PY
)"
  psql "$POSTHORN_TEST_DATABASE_URL" -qc "CREATE DATABASE $DB" >/dev/null
  local port; port="$(free_port)"
  export POSTHORN_ALLOW_PRIVATE_TARGETS=true LEPTOS_SITE_ADDR="127.0.0.1:$port" POSTHORN_PUBLIC_URL="http://127.0.0.1:$port"
  # Failing attempts are dead-lettered within a second (two retries 200 ms apart), so the
  # recovery tests have dead letters to replay.
  export POSTHORN_RETRY_SCHEDULE=200ms,200ms
  export POSTHORN_TEST_URL="http://127.0.0.1:$port"
  "$POSTHORN_BIN" migrate >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; return 1; }
  "$POSTHORN_BIN" serve >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  # Any HTTP answer means it is up (unauthenticated calls are rate-limited per address).
  for _ in $(seq 1 300); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$POSTHORN_TEST_URL/public/v1/openapi.json")" != 000 ]; then
      log "server up on $POSTHORN_TEST_URL (database $DB)"; return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.2
  done
  cat "$WORK/server.log" >&2
  log "the server did not start"; return 1
}

# Prints the API key of a new project.
project() {
  "$POSTHORN_BIN" create-project --name "$1" --owner-email "$1-$$@example.com" \
    --owner-password "sdk-test-password" --plan "$2" 2>>"$WORK/create.log" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])'
}

# Prints a new operator key (for /operator/v1).
operator_key() {
  "$POSTHORN_BIN" create-operator-key --name "$1" 2>>"$WORK/create.log" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["operator_key"])'
}

# Runs one suite in the background with its own projects and operator key; output to
# $WORK/<name>.log.
run_suite() {
  local name="$1"; shift
  (
    export POSTHORN_REQUIRE_SERVER=1
    export POSTHORN_TEST_KEY_BUSINESS POSTHORN_TEST_KEY_TRIAL_A POSTHORN_TEST_KEY_TRIAL_B
    export POSTHORN_OPERATOR_KEY
    POSTHORN_TEST_KEY_BUSINESS="$(project "$name-business" business)"
    POSTHORN_TEST_KEY_TRIAL_A="$(project "$name-trial-a" trial)"
    POSTHORN_TEST_KEY_TRIAL_B="$(project "$name-trial-b" trial)"
    POSTHORN_OPERATOR_KEY="$(operator_key "$name-operator")"
    start=$(date +%s)
    set +e
    "$@" >"$WORK/$name.log" 2>&1
    code=$?
    echo "$code $(( $(date +%s) - start ))" >"$WORK/$name.status"
  ) &
  PIDS+=($!)
}

ensure_tools
start_server
export POSTHORN_SWH_FIXTURES="$WORK/standardwebhooks.json"
"$SDK/python/.venv/bin/python" "$SDK/standardwebhooks_fixtures.py" "$POSTHORN_SWH_FIXTURES"

log "running the Python, TypeScript, PHP, Go and Ruby suites at once (about a minute: each waits out a trial key's rate limit)"
run_suite python bash -c "cd '$SDK/python' && exec .venv/bin/python -m pytest -q -p no:cacheprovider tests"
run_suite typescript bash -c "cd '$SDK/typescript' && exec node --test --test-concurrency=1 test/"
run_suite php bash -c "cd '$SDK/php' && exec phpunit --do-not-cache-result"
run_suite ruby bash -c "cd '$SDK/ruby' && exec ruby -Ilib -Itest -e 'Dir[\"test/**/*_test.rb\"].sort.each { |f| require_relative f }'"
run_suite go bash -c "cd '$SDK/go' && exec go test -count=1 ./..."
for pid in "${PIDS[@]}"; do wait "$pid" || true; done
PIDS=()

failed=0
for name in python typescript php ruby go; do
  read -r code secs <"$WORK/$name.status" 2>/dev/null || { code=1; secs="?"; }
  log "$name: exit $code in ${secs}s"
  cat "$WORK/$name.log"
  [ "$code" = 0 ] || failed=1
done
if [ "$failed" != 0 ]; then
  log "server log (last 50 lines)"; tail -n 50 "$WORK/server.log" >&2
  log "client library tests FAILED"
  exit 1
fi
log "client library tests passed"
