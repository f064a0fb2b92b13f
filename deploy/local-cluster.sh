#!/usr/bin/env bash
# Posthorn's reference high-availability topology, on the loopback ports of one machine:
# three PostgreSQL 15 nodes under Patroni (each beside an etcd member, as on three
# machines), HAProxy in front of the leader and of two `posthorn serve`, and one
# `posthorn dispatch`.
#
#   deploy/local-cluster.sh up     start it afresh; prints one JSON line last
#   deploy/local-cluster.sh down   stop everything it started
#
# Every process logs to a file under $POSTHORN_CLUSTER_DIR/logs; nothing holds this
# script's output open once it returns. POSTHORN_* variables in the environment go on to
# the posthorn processes; POSTHORN_BIN names the binary (default: the debug build).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPLOY="$ROOT/deploy"
DIR="${POSTHORN_CLUSTER_DIR:-/var/tmp/posthorn-cluster}"
BASE="${POSTHORN_CLUSTER_PORT:-7400}"
NODES=(pg1 pg2 pg3)
SERVERS=2
PRIMARY_PORT=$((BASE + 10))
HTTP_PORT=$((BASE + 20))
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
POSTHORN_BIN="${POSTHORN_BIN:-$TARGET/debug/posthorn}"
SITE_ROOT="${LEPTOS_SITE_ROOT:-$TARGET/site}"

pg_port() { echo $((BASE + 11 + $1)); }      # node i: 7411…
rest_port() { echo $((BASE + 31 + $1)); }    # Patroni REST: 7431…
etcd_port() { echo $((BASE + 41 + $1)); }    # etcd clients: 7441…
peer_port() { echo $((BASE + 51 + $1)); }    # etcd peers: 7451…
server_port() { echo $((BASE + 21 + $1)); }  # posthorn serve: 7421…

log() { printf '==> %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian's packages, without letting their maintainer scripts start the system's own
# etcd or HAProxy (this topology runs its own, on its own ports).
ensure_packages() {
  local missing=()
  command -v patroni >/dev/null || missing+=(patroni)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v haproxy >/dev/null || missing+=(haproxy)
  ls /usr/lib/postgresql/15/bin/postgres >/dev/null 2>&1 || missing+=(postgresql-15)
  command -v curl >/dev/null || missing+=(curl)
  command -v psql >/dev/null || missing+=(postgresql-client)
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]} (apt)"
  local policy=/usr/sbin/policy-rc.d placed=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"; placed=1
  fi
  local ok=0
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null 2>&1 \
    || { as_root apt-get update >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null; } || ok=$?
  [ -n "$placed" ] && as_root rm -f "$policy"
  [ "$ok" = 0 ] || die "apt-get install ${missing[*]} failed"
}

# PostgreSQL refuses to run as root: as root, the nodes run as the `postgres` user.
PG_USER="$(id -un)"
pg_prefix() {
  if [ "$(id -u)" = 0 ]; then echo setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups --; fi
}

# Starts a command in its own session, output to a log file; records its pid.
spawn() {
  local name="$1"; shift
  setsid "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/$name"
}

wait_for() {
  local what="$1" seconds="$2"; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what did not come up in ${seconds}s (logs: $DIR/logs)"
    sleep 0.3
  done
}

render() {  # template, output, then name=value pairs for its @name@ fields
  local template="$1" out="$2"; shift 2
  local text; text="$(cat "$template")"
  local pair
  for pair in "$@"; do text="${text//@${pair%%=*}@/${pair#*=}}"; done
  printf '%s\n' "$text" >"$out"
}

secret() { head -c 18 /dev/urandom | base64 | tr '+/' 'xy'; }

up() {
  down quiet
  ensure_packages
  [ -x "$POSTHORN_BIN" ] || die "no posthorn binary at $POSTHORN_BIN (build it, or set POSTHORN_BIN)"
  [ "$(id -u)" = 0 ] && PG_USER=postgres
  rm -rf "$DIR" && mkdir -p "$DIR/logs" "$DIR/pids"
  chmod 755 "$DIR"
  local superuser replication rewind
  superuser="$(secret)"; replication="$(secret)"; rewind="$(secret)"

  # Heartbeats a quarter second apart (not etcd's 100 ms): three members on one machine
  # otherwise spend a tenth of a core talking to each other. Patroni's ttl is 20 s.
  log "etcd: three members"
  local i cluster="" hosts=""
  for i in 0 1 2; do
    cluster+="${cluster:+,}e$i=http://127.0.0.1:$(peer_port $i)"
    hosts+="${hosts:+,}127.0.0.1:$(etcd_port $i)"
  done
  for i in 0 1 2; do
    mkdir -p "$DIR/etcd$i"
    spawn "etcd$i" etcd --name "e$i" --data-dir "$DIR/etcd$i" \
      --listen-client-urls "http://127.0.0.1:$(etcd_port $i)" \
      --advertise-client-urls "http://127.0.0.1:$(etcd_port $i)" \
      --listen-peer-urls "http://127.0.0.1:$(peer_port $i)" \
      --initial-advertise-peer-urls "http://127.0.0.1:$(peer_port $i)" \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token posthorn \
      --heartbeat-interval 250 --election-timeout 2500
  done
  wait_for "etcd" 30 curl -sf "http://127.0.0.1:$(etcd_port 0)/health"

  log "PostgreSQL: three nodes under Patroni"
  local bin_dir; bin_dir="$(ls -d /usr/lib/postgresql/15/bin)"
  for i in 0 1 2; do
    local node="${NODES[$i]}" nd="$DIR/${NODES[$i]}"
    mkdir -p "$nd" && chmod 700 "$nd"
    render "$DEPLOY/patroni.yml.in" "$nd/patroni.yml" \
      NAME="$node" REST_PORT="$(rest_port $i)" PG_PORT="$(pg_port $i)" ETCD_HOSTS="$hosts" \
      DATA_DIR="$nd/data" BIN_DIR="$bin_dir" NODE_DIR="$nd" SUPERUSER_PASSWORD="$superuser" \
      REPLICATION_PASSWORD="$replication" REWIND_PASSWORD="$rewind"
    [ "$(id -u)" = 0 ] && chown -R "$PG_USER" "$nd"
    # The first node bootstraps alone; the others then copy it (no race for the key).
    # shellcheck disable=SC2046
    spawn "$node" $(pg_prefix) patroni "$nd/patroni.yml"
    [ "$i" = 0 ] && wait_for "the first node's bootstrap" 60 curl -sf "http://127.0.0.1:$(rest_port 0)/primary"
  done
  local database_url="postgres://postgres:$superuser@127.0.0.1:$PRIMARY_PORT/posthorn"

  log "HAProxy: the leader on :$PRIMARY_PORT, the servers on :$HTTP_PORT"
  local pg_servers="" http_servers=""
  for i in 0 1 2; do
    pg_servers+="    server ${NODES[$i]} 127.0.0.1:$(pg_port $i) maxconn 1000 check port $(rest_port $i)"$'\n'
  done
  for ((i = 0; i < SERVERS; i++)); do
    http_servers+="    server serve$i 127.0.0.1:$(server_port $i) check"$'\n'
  done
  render "$DEPLOY/haproxy.cfg.in" "$DIR/haproxy.cfg" \
    PRIMARY_PORT="$PRIMARY_PORT" HTTP_PORT="$HTTP_PORT" PG_SERVERS="$pg_servers" HTTP_SERVERS="$http_servers"
  haproxy -c -q -f "$DIR/haproxy.cfg" || die "haproxy.cfg does not check"
  spawn haproxy haproxy -db -f "$DIR/haproxy.cfg"
  # HAProxy starts with every server up until its checks say otherwise (two failed
  # checks, 2 s): wait until six connections in a row reach the leader, so nothing below
  # lands on a node that is not it.
  local admin="postgres://postgres:$superuser@127.0.0.1:$PRIMARY_PORT/postgres"
  wait_for "the leader alone through HAProxy" 60 sh -c \
    "for n in 1 2 3 4 5 6; do psql '$admin' -tAc 'SELECT NOT pg_is_in_recovery()' | grep -qx t || exit 1; done"
  wait_for "the posthorn database" 30 sh -c \
    "psql '$admin' -tAc \"SELECT 1 FROM pg_database WHERE datname = 'posthorn'\" | grep -qx 1 || psql '$admin' -qc 'CREATE DATABASE posthorn'"
  for i in 1 2; do
    wait_for "${NODES[$i]} streaming" 90 sh -c \
      "curl -sf http://127.0.0.1:$(rest_port $i)/replica >/dev/null"
  done
  wait_for "a synchronous standby" 60 sh -c \
    "curl -sf http://127.0.0.1:$(rest_port 0)/cluster | grep -q '\"sync_standby\"'"

  log "posthorn: migrations, $SERVERS servers, one dispatcher"
  export DATABASE_URL="$database_url"
  export LEPTOS_SITE_ROOT="$SITE_ROOT"
  export POSTHORN_PUBLIC_URL="${POSTHORN_PUBLIC_URL:-http://127.0.0.1:$HTTP_PORT}"
  "$POSTHORN_BIN" migrate >>"$DIR/logs/migrate.log" 2>&1 || die "migrations failed (logs: $DIR/logs/migrate.log)"
  local servers=""
  for ((i = 0; i < SERVERS; i++)); do
    LEPTOS_SITE_ADDR="127.0.0.1:$(server_port $i)" spawn "serve$i" "$POSTHORN_BIN" serve --no-dispatch
  done
  spawn dispatch "$POSTHORN_BIN" dispatch
  for ((i = 0; i < SERVERS; i++)); do
    wait_for "serve$i" 60 curl -sf "http://127.0.0.1:$(server_port $i)/healthz"
    servers+="${servers:+,}{\"url\":\"http://127.0.0.1:$(server_port $i)\",\"pid\":$(cat "$DIR/pids/serve$i")}"
  done
  wait_for "the load balancer" 30 curl -sf "http://127.0.0.1:$HTTP_PORT/healthz"
  local nodes=""
  for i in 0 1 2; do
    nodes+="${nodes:+,}{\"name\":\"${NODES[$i]}\",\"patroni\":\"http://127.0.0.1:$(rest_port $i)\",\"data_dir\":\"$DIR/${NODES[$i]}/data\"}"
  done
  log "up: logs in $DIR/logs"
  printf '{"base_url":"http://127.0.0.1:%s","database_url":"%s","dispatcher_pid":%s,"nodes":[%s],"servers":[%s]}\n' \
    "$HTTP_PORT" "$database_url" "$(cat "$DIR/pids/dispatch")" "$nodes" "$servers"
}

# Stops what `up` started: the posthorn processes first, then the load balancer, the
# nodes (Patroni stops its PostgreSQL) and etcd; then any PostgreSQL left behind.
down() {
  [ -d "$DIR/pids" ] || { [ "${1:-}" = quiet ] || log "nothing to stop"; return 0; }
  local file pid
  for file in "$DIR"/pids/serve* "$DIR"/pids/dispatch "$DIR"/pids/haproxy "$DIR"/pids/pg* "$DIR"/pids/etcd*; do
    [ -f "$file" ] || continue
    pid="$(cat "$file")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$file"
  done
  local data
  for data in "$DIR"/pg*/data; do
    [ -f "$data/postmaster.pid" ] || continue
    pid="$(head -n1 "$data/postmaster.pid")"
    kill -QUIT "$pid" 2>/dev/null || true
  done
  [ "${1:-}" = quiet ] || log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: deploy/local-cluster.sh up|down" >&2; exit 2 ;;
esac
