#!/usr/bin/env bash
# Posthorn's reference high-availability topology, on the loopback ports of one machine:
# three PostgreSQL 15 nodes under Patroni (each beside an etcd member, as on three
# machines), HAProxy in front of the leader and of two `posthorn serve`, and one
# `posthorn dispatch`.
#
#   deploy/local-cluster.sh up     start it afresh; prints one JSON line last
#   deploy/local-cluster.sh down   stop everything it started
#
# Everything lives in one folder that is the user's alone: POSTHORN_CLUSTER_DIR, or else
# a folder made by mktemp under /var/tmp on the first `up`, remembered for `down` and the
# next `up` in ~/.local/state/posthorn/ (one per POSTHORN_CLUSTER_PORT). A folder another
# user owns, may use, or could swap for one of theirs is refused. Every process logs to
# a file under its logs/; nothing holds this script's output open once it returns. The
# passwords (secrets.env there) are never on a command line: other local users may read
# those. Patroni's REST API takes changes only with its password; etcd talks only to a
# holder of a certificate made for the cluster, and then only with a password. Each
# port must be free before `up` and is checked to be held by the cluster's own process
# before anything is sent to it. `down` stops only processes this cluster started.
#
# POSTHORN_* variables in the environment go on to the posthorn processes; POSTHORN_BIN
# names the binary (default: the debug build).
set -euo pipefail
umask 077

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPLOY="$ROOT/deploy"
BASE="${POSTHORN_CLUSTER_PORT:-7400}"
NODES=(pg1 pg2 pg3)
SERVERS=2
PRIMARY_PORT=$((BASE + 10))
HTTP_PORT=$((BASE + 20))
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
POSTHORN_BIN="${POSTHORN_BIN:-$TARGET/debug/posthorn}"
SITE_ROOT="${LEPTOS_SITE_ROOT:-$TARGET/site}"
BIN_DIR=/usr/lib/postgresql/15/bin
# The remembered folder of the cluster on these ports.
POINTER="${XDG_STATE_HOME:-$HOME/.local/state}/posthorn/local-cluster-$BASE.dir"
DIR=""
MARKER=.posthorn-local-cluster

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
  command -v openssl >/dev/null || missing+=(openssl)
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

# PostgreSQL refuses to run as root: as root, the nodes run as a system user of their
# own, made on first use. Not as `postgres`: whoever runs code as the machine's own
# PostgreSQL (any superuser of it, through COPY … TO PROGRAM) could then read the
# nodes' passwords and stop them.
PG_USER="$(id -un)"
[ "$(id -u)" = 0 ] && PG_USER=posthorn-pg
ensure_node_user() {
  [ "$(id -u)" = 0 ] && ! id -u "$PG_USER" >/dev/null 2>&1 || return 0
  log "adding the system user $PG_USER for the nodes"
  useradd --system --user-group --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin "$PG_USER"
}
pg_prefix() {
  if [ "$(id -u)" = 0 ]; then echo setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups --; fi
}

# --- the cluster's folder --------------------------------------------------------------

# Why the folder $1 is not safe to keep this cluster in (printed), or nothing: it must
# not be a symbolic link, must be the user's and closed to group and others (as root,
# 0710 for the nodes' group, which they need to pass through), and no folder
# above it may belong to or be writable by another user (but for sticky ones, such as
# /var/tmp): they could rename it and put one of theirs in its place.
refusal() {
  local dir="$1" uid owner group mode p
  uid="$(id -u)"
  [[ "$dir" =~ ^/[A-Za-z0-9._/+@-]+$ ]] || { echo "use an absolute path of letters, digits and ._/+@-"; return 1; }
  if [ -L "$dir" ]; then echo "it is a symbolic link"; return 1; fi
  if [ -e "$dir" ]; then
    [ -d "$dir" ] || { echo "it is not a folder"; return 1; }
    read -r owner group mode <<<"$(stat -c '%u %g %a' "$dir")"
    [ "$owner" = "$uid" ] || { echo "it belongs to uid $owner, not to you"; return 1; }
    mode=$((8#$mode & 8#077))
    if [ "$mode" != 0 ] && ! { [ "$uid" = 0 ] && [ "$mode" = $((8#010)) ] &&
      [ "$group" = "$(id -g "$PG_USER" 2>/dev/null)" ]; }; then
      printf 'group or others may use it (mode %o; chmod 700 it)\n' "$(( 8#$(stat -c %a "$dir") ))"
      return 1
    fi
  fi
  p="$(dirname "$dir")"
  while [ ! -e "$p" ]; do p="$(dirname "$p")"; done
  p="$(cd -P "$p" && pwd -P)"
  while :; do
    read -r owner mode <<<"$(stat -c '%u %a' "$p")"
    if [ "$owner" != 0 ] && [ "$owner" != "$uid" ]; then echo "$p above it belongs to uid $owner"; return 1; fi
    if (( 8#$mode & 8#022 )) && ! (( 8#$mode & 8#1000 )); then
      echo "others may write to $p above it (and so replace it)"; return 1
    fi
    [ "$p" = / ] && return 0
    p="$(dirname "$p")"
  done
}

# The folder without symbolic links above it (a link could later be pointed elsewhere).
canonical() { echo "$(cd -P "$(dirname "$1")" && pwd -P)/$(basename "$1")"; }

# Sets DIR: POSTHORN_CLUSTER_DIR, else the remembered one (if any), and dies if it is
# refused; with "fresh" (for `up`), a refused remembered folder is left alone instead.
find_dir() {
  local reason
  if [ -n "${POSTHORN_CLUSTER_DIR:-}" ]; then
    DIR="$POSTHORN_CLUSTER_DIR"
    [[ "$DIR" = /* ]] || DIR="$PWD/$DIR"
    reason="$(refusal "$DIR")" || die "refusing $DIR: $reason"
  elif [ -f "$POINTER" ]; then
    DIR="$(<"$POINTER")"
    if ! reason="$(refusal "$DIR")"; then
      [ "${1:-}" = fresh ] || die "refusing $DIR (remembered in $POINTER): $reason"
      log "not using $DIR (remembered in $POINTER): $reason; starting in a new folder"
      DIR=""
    fi
  else
    DIR=""
  fi
  if [ -n "$DIR" ] && [ -e "$(dirname "$DIR")" ]; then DIR="$(canonical "$DIR")"; fi
}

# Makes DIR ready and empty for a new cluster: an existing one only if a cluster made it
# (or it is empty); a missing one created 0700; by default a new one from mktemp.
prepare_dir() {
  local reason
  if [ -n "$DIR" ] && [ -e "$DIR" ]; then
    if [ ! -e "$DIR/$MARKER" ] && [ -n "$(ls -A "$DIR")" ]; then
      die "refusing $DIR: it holds files and is not a local cluster's folder"
    fi
    find "$DIR" -mindepth 1 -delete
  elif [ -n "${POSTHORN_CLUSTER_DIR:-}" ]; then
    mkdir -p "$(dirname "$DIR")"
    mkdir -m 700 "$DIR"
    DIR="$(canonical "$DIR")"
  else
    DIR="$(mktemp -d /var/tmp/posthorn-cluster.XXXXXXXXXX)"
    mkdir -p "$(dirname "$POINTER")"
    printf '%s\n' "$DIR" >"$POINTER"
  fi
  reason="$(refusal "$DIR")" || die "refusing $DIR: $reason"
  : >"$DIR/$MARKER"
  if [ "$(id -u)" = 0 ]; then chgrp "$(id -g "$PG_USER")" "$DIR" && chmod 710 "$DIR"; fi
  mkdir "$DIR/logs" "$DIR/pids"
}

# --- the processes it starts -----------------------------------------------------------

# Process $1's fields in /proc/$1/stat from its state on (${STAT[0]}): its session is
# ${STAT[3]}, its start time (clock ticks since boot) ${STAT[19]}. False when it is gone.
read_stat() {
  local stat
  STAT=()
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  read -r -a STAT <<<"${stat##*) }"
}
start_time() { read_stat "$1" && echo "${STAT[19]}" || true; }

# Starts a command in its own session, output to a log file; its pid file holds the pid
# and the process's start time, and its environment this cluster's id.
spawn() {
  local name="$1"; shift
  LOCAL_CLUSTER_ID="$CLUSTER_ID" setsid "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $(start_time "$pid")" >"$DIR/pids/$name"
}

# Whether pid $1 with start time $2 is a process this cluster started and still runs:
# that start time (not a later process given the same pid), the user's (or, as root,
# postgres'), its own session, and this cluster's id in its environment (which only its
# user and root can read). A pid file that names anything else stops nothing.
ours() {
  local pid="$1" started="$2" key uid var
  [[ "$pid" =~ ^[1-9][0-9]*$ && "$started" =~ ^[0-9]+$ ]] || return 1
  read_stat "$pid" && [ "${STAT[19]}" = "$started" ] && [ "${STAT[3]}" = "$pid" ] || return 1
  while read -r key uid _; do [ "$key" = Uid: ] && break; done 2>/dev/null <"/proc/$pid/status" || return 1
  [ "$uid" = "$(id -u)" ] || [ "$uid" = "$(id -u "$PG_USER")" ] || return 1
  while IFS= read -r -d '' var; do
    [ "$var" = "LOCAL_CLUSTER_ID=$CLUSTER_ID" ] && return 0
  done 2>/dev/null <"/proc/$pid/environ"
  return 1
}

wait_for() {
  local what="$1" seconds="$2"; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ -z "$FOREIGN" ] || die "$FOREIGN"
    [ $SECONDS -lt $deadline ] || die "$what did not come up in ${seconds}s (logs: $DIR/logs)"
    sleep 0.3
  done
}

# --- its ports ---------------------------------------------------------------------------

# Any local user may listen on a free loopback port: one who got a port of the cluster
# first would be sent its passwords and traffic. So every port must be free before `up`,
# and each one listened on by this user (or the nodes' user) before anything is sent to
# it. FOREIGN says which port another user holds.
FOREIGN=""
all_ports() {
  local i
  echo "$PRIMARY_PORT" "$HTTP_PORT"
  for i in 0 1 2; do echo "$(pg_port $i)" "$(rest_port $i)" "$(etcd_port $i)" "$(peer_port $i)"; done
  for ((i = 0; i < SERVERS; i++)); do server_port $i; done
}
# The uids listening on TCP port $1 (any address), one per line.
listeners() {
  local hex file _sl addr _rem st _q _tr _rt uid _rest
  hex="$(printf ':%04X' "$1")"
  for file in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$file" ] || continue
    while read -r _sl addr _rem st _q _tr _rt uid _rest; do
      [ "$st" = 0A ] && [ "${addr: -5}" = "$hex" ] && echo "$uid"
    done <"$file"
  done
  return 0
}
ports_free() {
  local port uids
  for port in $(all_ports); do
    uids="$(listeners "$port")"
    [ -z "$uids" ] || die "port $port is taken (by uid $(echo $uids | tr ' ' ,)): stop what holds it, or set POSTHORN_CLUSTER_PORT"
  done
}
# True once every port $@ is listened on, all by this user or the nodes' user.
listening() {
  local port uid mine any
  mine="$(id -u)"
  for port in "$@"; do
    any=""
    for uid in $(listeners "$port"); do
      if [ "$uid" != "$mine" ] && [ "$uid" != "$(id -u "$PG_USER")" ]; then
        FOREIGN="another user (uid $uid) listens on port $port: refusing to go on"
        return 1
      fi
      any=1
    done
    [ -n "$any" ] || return 1
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

# psql as the superuser to the leader through HAProxy; the password comes from the
# 0600 file PGPASSFILE names, never from the command line.
psql_admin() { PGPASSFILE="$DIR/pgpass" psql -w -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d postgres "$@"; }
leader_alone() {
  local n
  for n in 1 2 3 4 5 6; do [ "$(psql_admin -tAc 'SELECT NOT pg_is_in_recovery()')" = t ] || return 1; done
}
posthorn_database() {
  [ "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = 'posthorn'")" = 1 ] ||
    psql_admin -qc 'CREATE DATABASE posthorn'
}
synchronous_standby() { curl -sf "http://127.0.0.1:$(rest_port 0)/cluster" | grep -q '"sync_standby"'; }

# A certificate authority made for this cluster only, and two certificates signed by it:
# the etcd members' (127.0.0.1), for their client and peer ports, and a client's, which
# Patroni and this script present. Those ports accept no one without one: etcd 3.4
# lets anyone raise an alarm, and with a NOSPACE alarm raised it no longer checks
# users at all, so its passwords alone keep no one out. The authority's key is deleted
# once it has signed: nothing else will ever be signed by it.
certificates() {
  local tls="$DIR/tls" name
  mkdir "$tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=posthorn local cluster" -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
  # The client's has no common name: etcd refuses one with a name at its HTTP gateway,
  # which Patroni uses (it would otherwise be taken for a user's name).
  for name in member client; do
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "$([ "$name" = member ] && echo /CN=etcd-member || echo "/O=posthorn local cluster/OU=etcd client")" \
      -keyout "$tls/$name.key" -out "$tls/$name.csr" 2>/dev/null
    openssl x509 -req -in "$tls/$name.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
      -days 3650 -out "$tls/$name.crt" 2>/dev/null -extfile <(
        if [ "$name" = member ]; then
          printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n'
        else
          printf 'extendedKeyUsage=clientAuth\n'
        fi)
  done
  rm -f "$tls/ca.key" "$tls"/*.csr "$tls/ca.srl"
}
etcd_health() {  # of the member on client port $1
  curl -sf --cacert "$DIR/tls/ca.crt" --cert "$DIR/tls/client.crt" --key "$DIR/tls/client.key" \
    "https://127.0.0.1:$1/health"
}

# etcd's users before its authentication goes on: root, and patroni with read and write
# on Patroni's keys only. Until then anyone could write to it, so once it is on nothing
# but these (users, roles, members, no key at all) may be there. Passwords come in
# through the environment of this one process.
etcd_auth() {
  ETCD_AUTH_URL="https://127.0.0.1:$(etcd_port 0)" ETCD_AUTH_TLS="$DIR/tls" \
    ETCD_AUTH_ROOT="$1" ETCD_AUTH_PATRONI="$2" python3 - <<'EOF'
import base64, json, os, ssl, sys, urllib.error, urllib.request

url = os.environ["ETCD_AUTH_URL"] + "/v3"
root, patroni = os.environ["ETCD_AUTH_ROOT"], os.environ["ETCD_AUTH_PATRONI"]
tls = os.environ["ETCD_AUTH_TLS"]
context = ssl.create_default_context(cafile=os.path.join(tls, "ca.crt"))
context.load_cert_chain(os.path.join(tls, "client.crt"), os.path.join(tls, "client.key"))


def b64(text):
    return base64.b64encode(text.encode()).decode()


def call(path, body, token=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    if token:
        req.add_header("authorization", token)
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        sys.exit(f"etcd {path}: {e.code} {e.read().decode(errors='replace')}")


perm = {"permType": "READWRITE", "key": b64("/service/"), "range_end": b64("/service0")}
call("/auth/user/add", {"name": "root", "password": root})
call("/auth/role/add", {"name": "root"})
call("/auth/user/grant", {"user": "root", "role": "root"})
call("/auth/role/add", {"name": "patroni"})
call("/auth/role/grant", {"name": "patroni", "perm": perm})
call("/auth/user/add", {"name": "patroni", "password": patroni})
call("/auth/user/grant", {"user": "patroni", "role": "patroni"})
call("/auth/enable", {})
token = call("/auth/authenticate", {"name": "root", "password": root})["token"]
found = {
    "users": sorted(call("/auth/user/list", {}, token).get("users", [])),
    "roles": sorted(call("/auth/role/list", {}, token).get("roles", [])),
    "root": call("/auth/user/get", {"name": "root"}, token).get("roles", []),
    "patroni": call("/auth/user/get", {"name": "patroni"}, token).get("roles", []),
    "perms": call("/auth/role/get", {"role": "patroni"}, token).get("perm", []),
    "keys": int(call("/kv/range", {"key": b64("\0"), "range_end": b64("\0"), "count_only": True},
                     token).get("count", 0)),
    "members": len(call("/cluster/member/list", {}, token)["members"]),
}
wanted = {"users": ["patroni", "root"], "roles": ["patroni", "root"], "root": ["root"],
          "patroni": ["patroni"], "perms": [perm], "keys": 0, "members": 3}
if found != wanted:
    sys.exit(f"etcd was changed before its authentication went on: {found}")
EOF
}

up() {
  find_dir fresh
  down quiet
  ensure_packages
  ensure_node_user
  [ -x "$POSTHORN_BIN" ] || die "no posthorn binary at $POSTHORN_BIN (build it, or set POSTHORN_BIN)"
  ports_free
  prepare_dir
  CLUSTER_ID="$(secret)"
  printf '%s\n' "$CLUSTER_ID" >"$DIR/cluster-id"
  local superuser replication rewind rest etcd_root etcd_patroni
  superuser="$(secret)"; replication="$(secret)"; rewind="$(secret)"; rest="$(secret)"
  etcd_root="$(secret)"; etcd_patroni="$(secret)"
  cat >"$DIR/secrets.env" <<EOF
# This cluster's credentials, made afresh by each \`up\` (only its user may read this).
POSTGRES_SUPERUSER_PASSWORD=$superuser
POSTGRES_REPLICATION_PASSWORD=$replication
POSTGRES_REWIND_PASSWORD=$rewind
PATRONI_REST_USERNAME=patroni
PATRONI_REST_PASSWORD=$rest
ETCD_ROOT_PASSWORD=$etcd_root
ETCD_PATRONI_PASSWORD=$etcd_patroni
EOF
  printf '127.0.0.1:%s:*:postgres:%s\n' "$PRIMARY_PORT" "$superuser" >"$DIR/pgpass"

  # Heartbeats a quarter second apart (not etcd's 100 ms): three members on one machine
  # otherwise spend a tenth of a core talking to each other. Patroni's ttl is 20 s.
  log "etcd: three members"
  certificates
  local i cluster="" hosts=""
  for i in 0 1 2; do
    cluster+="${cluster:+,}e$i=https://127.0.0.1:$(peer_port $i)"
    hosts+="${hosts:+,}127.0.0.1:$(etcd_port $i)"
  done
  for i in 0 1 2; do
    spawn "etcd$i" etcd --name "e$i" --data-dir "$DIR/etcd$i" \
      --listen-client-urls "https://127.0.0.1:$(etcd_port $i)" \
      --advertise-client-urls "https://127.0.0.1:$(etcd_port $i)" \
      --cert-file "$DIR/tls/member.crt" --key-file "$DIR/tls/member.key" \
      --trusted-ca-file "$DIR/tls/ca.crt" --client-cert-auth \
      --listen-peer-urls "https://127.0.0.1:$(peer_port $i)" \
      --initial-advertise-peer-urls "https://127.0.0.1:$(peer_port $i)" \
      --peer-cert-file "$DIR/tls/member.crt" --peer-key-file "$DIR/tls/member.key" \
      --peer-trusted-ca-file "$DIR/tls/ca.crt" --peer-client-cert-auth \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token posthorn \
      --heartbeat-interval 250 --election-timeout 2500
  done
  wait_for "etcd" 30 etcd_health "$(etcd_port 0)"
  wait_for "etcd's ports" 30 listening $(for i in 0 1 2; do etcd_port $i; peer_port $i; done)
  etcd_auth "$etcd_root" "$etcd_patroni" || die "etcd's authentication could not be set up"

  log "PostgreSQL: three nodes under Patroni"
  for i in 0 1 2; do
    local node="${NODES[$i]}" nd="$DIR/${NODES[$i]}"
    mkdir "$nd"
    cp "$DIR/tls/ca.crt" "$nd/etcd-ca.crt"
    cp "$DIR/tls/client.crt" "$nd/etcd-client.crt"
    cp "$DIR/tls/client.key" "$nd/etcd-client.key"
    render "$DEPLOY/patroni.yml.in" "$nd/patroni.yml" \
      NAME="$node" REST_PORT="$(rest_port $i)" PG_PORT="$(pg_port $i)" ETCD_HOSTS="$hosts" \
      DATA_DIR="$nd/data" BIN_DIR="$BIN_DIR" NODE_DIR="$nd" SUPERUSER_PASSWORD="$superuser" \
      REPLICATION_PASSWORD="$replication" REWIND_PASSWORD="$rewind" REST_PASSWORD="$rest" \
      ETCD_PASSWORD="$etcd_patroni"
    [ "$(id -u)" = 0 ] && chown -R "$PG_USER:" "$nd"
    # The first node bootstraps alone; the others then copy it (no race for the key).
    # shellcheck disable=SC2046
    spawn "$node" $(pg_prefix) patroni "$nd/patroni.yml"
    # (Its ports before the others send it the replication password.)
    if [ "$i" = 0 ]; then
      wait_for "the first node's bootstrap" 60 curl -sf "http://127.0.0.1:$(rest_port 0)/primary"
      wait_for "the first node's ports" 30 listening "$(pg_port 0)" "$(rest_port 0)"
    fi
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
  wait_for "HAProxy's ports" 30 listening "$PRIMARY_PORT" "$HTTP_PORT"
  # HAProxy starts with every server up until its checks say otherwise (two failed
  # checks, 2 s): wait until six connections in a row reach the leader, so nothing below
  # lands on a node that is not it.
  wait_for "the leader alone through HAProxy" 60 leader_alone
  wait_for "the posthorn database" 30 posthorn_database
  for i in 1 2; do
    wait_for "${NODES[$i]} streaming" 90 curl -sf "http://127.0.0.1:$(rest_port $i)/replica"
  done
  wait_for "a synchronous standby" 60 synchronous_standby
  wait_for "the nodes' ports" 30 listening $(for i in 1 2; do pg_port $i; rest_port $i; done)

  log "posthorn: migrations, $SERVERS servers, one dispatcher"
  export DATABASE_URL="$database_url"
  export LEPTOS_SITE_ROOT="$SITE_ROOT"
  export POSTHORN_PUBLIC_URL="${POSTHORN_PUBLIC_URL:-http://127.0.0.1:$HTTP_PORT}"
  "$POSTHORN_BIN" migrate >>"$DIR/logs/migrate.log" 2>&1 || die "migrations failed (logs: $DIR/logs/migrate.log)"
  local servers="" pid
  for ((i = 0; i < SERVERS; i++)); do
    LEPTOS_SITE_ADDR="127.0.0.1:$(server_port $i)" spawn "serve$i" "$POSTHORN_BIN" serve --no-dispatch
  done
  spawn dispatch "$POSTHORN_BIN" dispatch
  for ((i = 0; i < SERVERS; i++)); do
    wait_for "serve$i" 60 curl -sf "http://127.0.0.1:$(server_port $i)/healthz"
    read -r pid _ <"$DIR/pids/serve$i"
    servers+="${servers:+,}{\"url\":\"http://127.0.0.1:$(server_port $i)\",\"pid\":$pid}"
  done
  wait_for "the servers' ports" 30 listening $(for ((i = 0; i < SERVERS; i++)); do server_port $i; done)
  wait_for "the load balancer" 30 curl -sf "http://127.0.0.1:$HTTP_PORT/healthz"
  local nodes=""
  for i in 0 1 2; do
    nodes+="${nodes:+,}{\"name\":\"${NODES[$i]}\",\"patroni\":\"http://127.0.0.1:$(rest_port $i)\",\"data_dir\":\"$DIR/${NODES[$i]}/data\"}"
  done
  log "up: logs in $DIR/logs, credentials in $DIR/secrets.env"
  read -r pid _ <"$DIR/pids/dispatch"
  printf '{"base_url":"http://127.0.0.1:%s","database_url":"%s","dir":"%s","dispatcher_pid":%s,"nodes":[%s],"servers":[%s]}\n' \
    "$HTTP_PORT" "$database_url" "$DIR" "$pid" "$nodes" "$servers"
}

# Stops what `up` started: the posthorn processes first, then the load balancer, the
# nodes (Patroni stops its PostgreSQL) and etcd; then any PostgreSQL left behind. Only
# processes that ours() recognises: a pid file naming anything else is left alone.
down() {
  [ -n "$DIR" ] && [ -d "$DIR/pids" ] || { [ "${1:-}" = quiet ] || log "nothing to stop"; return 0; }
  CLUSTER_ID="$(cat "$DIR/cluster-id" 2>/dev/null)" || CLUSTER_ID=""
  local file pid started
  for file in "$DIR"/pids/serve* "$DIR"/pids/dispatch "$DIR"/pids/haproxy "$DIR"/pids/pg* "$DIR"/pids/etcd*; do
    [ -f "$file" ] && [ ! -L "$file" ] || continue
    pid=""; started=""
    read -r pid started _ <"$file" || true
    if [ -n "$CLUSTER_ID" ] && ours "$pid" "$started"; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do ours "$pid" "$started" || break; sleep 0.1; done
      # Still the same process, so still the leader of its group: stop the whole group.
      ! ours "$pid" "$started" || kill -KILL -- "-$pid" 2>/dev/null || true
    elif read_stat "$pid" 2>/dev/null; then
      log "not stopping pid $pid named by $file: not a process this cluster started"
    fi
    rm -f "$file"
  done
  # A postmaster whose Patroni died first: the postgres binary, running in that data
  # directory, as its user.
  local data cwd uid key
  for data in "$DIR"/pg*/data; do
    [ -f "$data/postmaster.pid" ] || continue
    pid=""
    read -r pid <"$data/postmaster.pid" || true
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] || continue
    cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null)" || continue
    [ "$cwd" = "$data" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$BIN_DIR/postgres" ] || {
      log "not stopping pid $pid named by $data/postmaster.pid: not its postmaster"; continue; }
    while read -r key uid _; do [ "$key" = Uid: ] && break; done 2>/dev/null <"/proc/$pid/status" || continue
    [ "$uid" = "$(id -u "$PG_USER")" ] && kill -QUIT "$pid" 2>/dev/null || true
  done
  [ "${1:-}" = quiet ] || log "down"
}

case "${1:-}" in
  up) up ;;
  down) find_dir; down ;;
  *) echo "usage: deploy/local-cluster.sh up|down" >&2; exit 2 ;;
esac
