#!/usr/bin/env bash
# A scratch PostgreSQL cluster for the demo, tests and benchmarks, one per
# version (ALERTS_PG=15|16|18, see scripts/pg.sh) on its own port and data
# directory. Postgres refuses to run as root, so the cluster belongs to the
# `postgres` user and is driven with runuser. Usage: cluster.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pg.sh
pg_require
DATA=${ALERTS_PGDATA:-/tmp/alerts-pg-$PGPORT}
SOCK=/tmp

case "${1:-}" in
  start)
    if [ ! -s "$DATA/PG_VERSION" ]; then
      mkdir -p "$DATA"; chown postgres:postgres "$DATA"; chmod 700 "$DATA"
      as_pg "$PG_BINDIR/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
      # pg_stat_statements where the server has it (PostgreSQL 16's wheel has no contrib)
      preload=
      [ -e "$("$PG_CONFIG" --sharedir)/extension/pg_stat_statements.control" ] && preload=pg_stat_statements
      cat >> "$DATA/postgresql.conf" <<CONF
port = $PGPORT
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
shared_preload_libraries = '$preload'
CONF
    fi
    if ! as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 900 start >/dev/null
    fi
    echo "cluster: PostgreSQL $PG_VERSION running on port $PGPORT (data $DATA)"
    ;;
  stop)
    if [ -d "$DATA" ] && as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
      # fast, else immediate (a server still recovering may not stop in time)
      as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -m fast -w -t 120 stop >/dev/null \
        || as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null
    fi
    ;;
  status)
    as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" status
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
