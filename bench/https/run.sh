#!/usr/bin/env bash
# HTTPS fan-out, Posthorn beside Svix in one sitting: each product makes 100 endpoints on
# an nginx receiver and is offered RATE events/s for SECONDS, over plain HTTP, HTTPS with
# kept connections, and HTTPS with every connection closed (a full handshake per
# delivery); products alternate within each scheme. Figures: BENCHMARKS.md "HTTPS".
#
#   POSTHORN_BIN   a release `posthorn` (default: $CARGO_TARGET_DIR/release/posthorn)
#   SVIX_BIN       `svix-server` built from its source (BENCHMARKS.md says how); unset:
#                  Posthorn only
#   DATABASE_URL   an admin URL (default postgres://postgres@127.0.0.1:5432/postgres)
#   REDIS_URL      Svix's queue (default redis://127.0.0.1:6379)
#   RATE (72) SECONDS (60) ENDPOINTS (100) SCHEMES ("http https https-close") ROUNDS (1)
#   RATE_CLOSE (20): events/s for https-close, where a handshake per delivery bounds both
#   products far below RATE (a backlog of minutes would only delay the next run)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR=/var/tmp/posthorn-https-bench
POSTHORN_BIN="${POSTHORN_BIN:-${CARGO_TARGET_DIR:-$HERE/../../target}/release/posthorn}"
DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
RATE="${RATE:-72}" SECONDS_EACH="${SECONDS:-60}" ENDPOINTS="${ENDPOINTS:-100}"
SCHEMES="${SCHEMES:-http https https-close}" ROUNDS="${ROUNDS:-1}" RATE_CLOSE="${RATE_CLOSE:-20}"
log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || {
  log "installing nginx (apt)"
  as_root apt-get install -y nginx-light >/dev/null 2>&1 || { as_root apt-get update >/dev/null; as_root apt-get install -y nginx-light >/dev/null; }
}
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
mkdir -p "$DIR/body"
cd "$DIR"

# A CA made here; the receiver's certificate (ECDSA P-256, for localhost) signed by it.
if [ ! -f ca.pem ]; then
  log "making a CA and the receiver's certificate"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
    -days 30 -subj "/CN=Posthorn bench CA" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout receiver.key -out receiver.csr \
    -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' > san.ext
  openssl x509 -req -in receiver.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out receiver.pem -days 30 \
    -extfile san.ext 2>/dev/null
fi
sed "s|@DIR@|$DIR|g" "$HERE/nginx.conf.in" > nginx.conf
[ -f nginx.pid ] && kill "$(cat nginx.pid)" 2>/dev/null || true
"$NGINX" -c "$DIR/nginx.conf"
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; kill "$(cat "$DIR/nginx.pid")" 2>/dev/null || true; }
trap cleanup EXIT

db_url() { python3 -c "import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p._replace(path='/'+sys.argv[2]).geturl())" "$DATABASE_URL" "$1"; }
fresh_db() { psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" >/dev/null; }
wait_up() { for _ in $(seq 300); do curl -fs -m 2 "$1" >/dev/null 2>&1 && return; sleep 0.2; done; echo "$1 did not come up" >&2; exit 1; }
# Until the receiver has been idle for 3 s: a product's backlog from the last run is done.
# (The status request itself is one of the requests counted.)
wait_quiet() {
  local last=-1 same=0 now
  while [ $same -lt 3 ]; do
    now=$(curl -fs -m 2 http://127.0.0.1:8090/status | sed -n 3p | awk '{print $3}')
    if [ "$now" -le $((last + 1)) ]; then same=$((same + 1)); else same=0; fi
    last=$now; sleep 1
  done
}

log "posthorn serve ($POSTHORN_BIN)"
fresh_db ph_https_bench
PH_DB="$(db_url ph_https_bench)"
DATABASE_URL="$PH_DB" "$POSTHORN_BIN" migrate 2>/dev/null
env DATABASE_URL="$PH_DB" LEPTOS_SITE_ADDR=127.0.0.1:3900 POSTHORN_ALLOW_PRIVATE_TARGETS=true \
  POSTHORN_CA_FILE="$DIR/ca.pem" POSTHORN_PLAN_LIMITS=business=10000000 RUST_LOG=warn "$POSTHORN_BIN" serve >"$DIR/posthorn.log" 2>&1 &
PIDS+=($!)
wait_up http://127.0.0.1:3900/healthz

if [ -n "${SVIX_BIN:-}" ]; then
  log "svix-server ($SVIX_BIN)"
  fresh_db svix_https_bench
  export SVIX_JWT_SECRET=bench-secret-bench-secret-bench-secret SVIX_DB_DSN="$(db_url svix_https_bench)" \
    SVIX_REDIS_DSN="$REDIS_URL" SVIX_QUEUE_TYPE=redis SVIX_CACHE_TYPE=memory \
    SVIX_LISTEN_ADDRESS=127.0.0.1:8071 SVIX_WHITELIST_SUBNETS="[127.0.0.1/32]" SVIX_LOG_LEVEL=info SVIX_DB_POOL_MAX_SIZE=40 \
    SSL_CERT_FILE="$DIR/ca.pem"
  redis-cli -u "$REDIS_URL" FLUSHALL >/dev/null 2>&1 || true
  "$SVIX_BIN" --run-migrations >"$DIR/svix.log" 2>&1 &
  PIDS+=($!)
  wait_up http://127.0.0.1:8071/api/v1/health/
  SVIX_TOKEN="$("$SVIX_BIN" jwt generate 2>/dev/null | grep -o 'ey[A-Za-z0-9._-]*' | head -1)"
fi

RESULTS="$DIR/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
for round in $(seq "$ROUNDS"); do
  for scheme in $SCHEMES; do
    for product in posthorn ${SVIX_BIN:+svix}; do
      wait_quiet
      if [ "$product" = posthorn ]; then
        key="$(DATABASE_URL="$PH_DB" "$POSTHORN_BIN" create-project --name "bench $scheme $round" \
          --owner-email "bench-$round-$scheme@example.com" --owner-password bench-password-1 --plan business 2>/dev/null \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')"
        base=http://127.0.0.1:3900
      else
        key="$SVIX_TOKEN" base=http://127.0.0.1:8071
      fi
      rate=$RATE; [ "$scheme" = https-close ] && rate=$RATE_CLOSE
      log "round $round: $product, $scheme, $rate events/s"
      python3 "$HERE/compare.py" "$product" --base "$base" --key "$key" --scheme "$scheme" \
        --endpoints "$ENDPOINTS" --rate "$rate" --seconds "$SECONDS_EACH" | tee -a "$RESULTS"
    done
  done
done
log "results: $RESULTS"
