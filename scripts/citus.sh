#!/usr/bin/env bash
# A local Citus cluster on PostgreSQL 15 for the scale-out tests and
# benchmark: a coordinator and two workers, each its own data directory and
# port (ALERTS_CITUS_PORT, default 5450, and the next two), run as `postgres`.
#   citus.sh build         builds and installs Citus 13.2.2 from vendor/citus
#                          if the server does not have it (about 4 minutes
#                          on 2 cores; the build tree is kept in the cache)
#   citus.sh start [DB]    build, start the nodes, wire them, and create DB
#                          (default alerts_citus) with citus and alerts on
#                          every node (alerts must be installed: install.sh)
#   citus.sh stop | status
# Idempotent, like the other scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
export ALERTS_PG=15   # Citus 13.2 supports 15-17; of those only 15 has headers here
source scripts/pg.sh
pg_require
CITUS_VERSION=13.2.2
CITUS_SHA256=5a8340644f00342d0333995a0a9f06e8428d3c6a452b04e93e3c5b4c6110af48
BASE=${ALERTS_CITUS_PORT:-5450}
PORTS=("$BASE" $((BASE + 1)) $((BASE + 2)))   # coordinator, worker 1, worker 2
data() { echo "/tmp/alerts-citus-$1"; }
at() { local port=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -At -h /tmp -p "$port" -U postgres "$@"; }

build() {
  local libdir; libdir=$("$PG_CONFIG" --pkglibdir)
  if [ -e "$libdir/citus.so" ] && grep -qs "^$CITUS_VERSION\$" "$libdir/.citus-version"; then return 0; fi
  local deps=(libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev libicu-dev
              libselinux1-dev libxslt1-dev libpam0g-dev libreadline-dev uuid-dev make autoconf flex)
  local need=() p
  for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "citus: installing build dependencies ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  echo "$CITUS_SHA256  vendor/citus/citus-$CITUS_VERSION.tar.gz" | sha256sum -c --quiet \
    || { echo "citus: vendor/citus/citus-$CITUS_VERSION.tar.gz is not the release tree it should be" >&2; exit 1; }
  local tree=$ALERTS_PG_CACHE/citus-$CITUS_VERSION
  echo "citus: building Citus $CITUS_VERSION for PostgreSQL 15 in $tree (about 4 minutes)"
  rm -rf "$tree"; mkdir -p "$ALERTS_PG_CACHE"
  tar xzf "vendor/citus/citus-$CITUS_VERSION.tar.gz" -C "$ALERTS_PG_CACHE"
  local patch; patch=$(pwd)/vendor/citus/pg15.20-have_createdb_privilege.patch
  (cd "$tree" && patch -s -p1 < "$patch" && ./configure -q PG_CONFIG="$PG_CONFIG" >/dev/null \
     && make -s -j"$(nproc)" >/dev/null 2>&1 && make -s install >/dev/null)
  echo "$CITUS_VERSION" > "$libdir/.citus-version"
  echo "citus: Citus $CITUS_VERSION installed into $libdir"
}

start() {
  local db=${1:-alerts_citus} port d
  build
  for port in "${PORTS[@]}"; do
    d=$(data "$port")
    if [ ! -s "$d/PG_VERSION" ]; then
      mkdir -p "$d"; chown postgres:postgres "$d"; chmod 700 "$d"
      as_pg "$PG_BINDIR/initdb" -D "$d" -U postgres -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
      cat >> "$d/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '/tmp'
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'citus'
shared_buffers = ${ALERTS_CITUS_SHARED_BUFFERS:-512MB}
work_mem = 64MB
maintenance_work_mem = 512MB
max_wal_size = 4GB
max_connections = 200
jit = off
# shard moves copy through logical replication
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
CONF
    fi
    as_pg "$PG_BINDIR/pg_ctl" -D "$d" status >/dev/null 2>&1 \
      || as_pg "$PG_BINDIR/pg_ctl" -D "$d" -l "$d/server.log" -w -t 300 start >/dev/null
  done
  for port in "${PORTS[@]}"; do
    [ "$(at "$port" -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$db'")" = 1 ] \
      || at "$port" -d postgres -c "CREATE DATABASE $db"
    at "$port" -d "$db" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS citus"
  done
  local c=${PORTS[0]}
  at "$c" -d "$db" -c "SELECT citus_set_coordinator_host('127.0.0.1', $c)" >/dev/null
  for port in "${PORTS[@]:1}"; do
    [ "$(at "$c" -d "$db" -c "SELECT count(*) FROM pg_dist_node WHERE nodeport = $port")" = 1 ] \
      || at "$c" -d "$db" -c "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null
  done
  # Citus propagates CREATE EXTENSION to the workers
  at "$c" -d "$db" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS alerts"
  echo "citus: coordinator 127.0.0.1:$c, workers ${PORTS[1]} and ${PORTS[2]}, database $db (citus and alerts on every node)"
}

stop() {
  local port d
  for port in "${PORTS[@]}"; do
    d=$(data "$port")
    if [ -d "$d" ] && as_pg "$PG_BINDIR/pg_ctl" -D "$d" status >/dev/null 2>&1; then
      as_pg "$PG_BINDIR/pg_ctl" -D "$d" -m fast -w stop >/dev/null
    fi
  done
}

case "${1:-}" in
  build) build ;;
  start) start "${2:-}" ;;
  stop) stop ;;
  status) for port in "${PORTS[@]}"; do as_pg "$PG_BINDIR/pg_ctl" -D "$(data "$port")" status | head -1; done ;;
  *) echo "usage: $0 build|start [DB]|stop|status" >&2; exit 2 ;;
esac
