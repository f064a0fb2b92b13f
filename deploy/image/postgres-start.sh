#!/bin/sh
# Creates the cluster on the first start (the superuser's password from
# POSTGRES_PASSWORD, asked on every TCP connection; a database named by POSTGRES_DB),
# then runs PostgreSQL in the foreground on PGPORT (5432).
set -eu
PATH=@PGBIN@:/bin
PGDATA="${PGDATA:-/var/lib/postgresql/data/pgdata}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  printf '%s\n' "$POSTGRES_PASSWORD" | initdb -D "$PGDATA" -U postgres --pwfile=/dev/stdin \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE ${POSTGRES_DB:-posthorn}" | postgres --single -D "$PGDATA" postgres >/dev/null
  echo "postgres-start: cluster created in $PGDATA" >&2
fi
exec postgres -D "$PGDATA" -p "${PGPORT:-5432}" -c listen_addresses="${POSTGRES_LISTEN:-*}" \
  -c unix_socket_directories=/tmp -c jit=off -c max_connections="${POSTGRES_MAX_CONNECTIONS:-300}"
