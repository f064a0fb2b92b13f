#!/usr/bin/env bash
# Starts Posthorn for the Playwright suite on a fresh database with the demo data.
set -euo pipefail
: "${POSTHORN_BIN:?run through .ci/dev.sh test}"
: "${E2E_DATABASE_URL:?}"
PSQL="${POSTHORN_PSQL:-psql}"
ADMIN_URL="${E2E_DATABASE_URL%/*}/postgres"
DB="${E2E_DATABASE_URL##*/}"
"$PSQL" "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
"$PSQL" "$ADMIN_URL" -qc "CREATE DATABASE $DB" >/dev/null
export DATABASE_URL="$E2E_DATABASE_URL"
export LEPTOS_SITE_ADDR="127.0.0.1:${E2E_PORT}"
export POSTHORN_PUBLIC_URL="http://127.0.0.1:${E2E_PORT}"
export POSTHORN_ALLOW_PRIVATE_TARGETS=true
export POSTHORN_RETRY_SCHEDULE="1s,1s"
export POSTHORN_REPLAY_RATE=40
export POSTHORN_ALERT_INTERVAL=1s
"$POSTHORN_BIN" migrate
"$POSTHORN_BIN" seed-demo
exec "$POSTHORN_BIN" serve
