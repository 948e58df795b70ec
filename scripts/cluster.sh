#!/usr/bin/env bash
# A scratch PostgreSQL 15 cluster for the demo, tests and benchmarks.
# Postgres refuses to run as root, so the cluster belongs to the `postgres`
# user and is driven with runuser. Usage: cluster.sh start|stop|status
set -euo pipefail
BIN=/usr/lib/postgresql/15/bin
PORT=${ALERTS_PGPORT:-5499}
DATA=${ALERTS_PGDATA:-/tmp/alerts-pg-$PORT}
SOCK=/tmp
as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

case "${1:-}" in
  start)
    if [ ! -s "$DATA/PG_VERSION" ]; then
      mkdir -p "$DATA"; chown postgres:postgres "$DATA"; chmod 700 "$DATA"
      as_pg "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
      cat >> "$DATA/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$SOCK'
listen_addresses = ''
shared_buffers = ${ALERTS_SHARED_BUFFERS:-1GB}
work_mem = 64MB
maintenance_work_mem = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
max_connections = 100
fsync = ${ALERTS_FSYNC:-on}
synchronous_commit = off
jit = off
shared_preload_libraries = 'pg_stat_statements'
CONF
    fi
    if ! as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 900 start >/dev/null
    fi
    echo "cluster: running on port $PORT (data $DATA)"
    ;;
  stop)
    if [ -d "$DATA" ] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    fi
    ;;
  status)
    as_pg "$BIN/pg_ctl" -D "$DATA" status
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
