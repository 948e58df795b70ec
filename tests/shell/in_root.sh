#!/usr/bin/env bash
# The suites for a version served from a Debian root (17, 18, 19), run inside
# it by scripts/root.sh, on the release package as a DBA installs it: the
# .deb (built by scripts/package.sh in this root, unless ALERTS_PACKAGED=1
# says the run's package step just did) installed with dpkg -i and no Rust
# on PATH, a scratch cluster, then pg_regress and the isolation specs,
# upgrades from every released version, dump and restore, the random
# differential (Debian's psycopg), on 19 the suites with the extension
# outside the server's directories (tests/shell/control_path.sh), and the
# package's removal (dpkg -r leaves no file). ALERTS_ROOT_SUITES=package
# (18, whose suites all run on the host's server too): the .deb's test
# only, dpkg -i, pg_regress's base suites, isolation, dpkg -r. The
# cluster is stopped whatever happens, so the root's mounts can be undone.
#   root.sh VERSION run bash tests/shell/in_root.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
v=${ALERTS_PG:?run through scripts/root.sh}
source scripts/pg.sh
pg_require
status=0
part() {  # part NAME COMMAND...: runs one part, reports it, keeps going
  local name=$1 t=$SECONDS; shift
  if "$@"; then echo "--- ok: $name ($((SECONDS - t)) s)"
  else status=1; echo "--- FAILED: $name ($((SECONDS - t)) s)"; fi
}
if [ "${ALERTS_PACKAGED:-0}" != 1 ]; then
  t=$SECONDS
  ALERTS_PACKAGE_PART=1 ALERTS_PGS=$v bash scripts/package.sh
  echo "--- built and packaged in $((SECONDS - t)) s"
fi
bash tests/shell/package.sh install
bash scripts/cluster.sh start
trap 'bash scripts/cluster.sh stop || true' EXIT
if [ "${ALERTS_ROOT_SUITES:-}" = package ]; then
  # the .deb's own test: the base suites (every SQL function, the trigger,
  # plain SQL through the node); the whole suite ran on this major on the
  # host's server
  part "pg_regress base suites (no Rust on PATH)" \
    env ALERTS_REGRESS_SERIAL=1 bash tests/shell/regress.sh "target/regress-pg$v" tests/schedule_base
else
  part "pg_regress (no Rust on PATH)" bash tests/shell/regress.sh "target/regress-pg$v"
fi
mkdir -p "target/isolation-pg$v"
isolation() {
  env -i PATH="$PG_BINDIR:/usr/bin:/bin" LANG=C.UTF-8 \
    "$PG_ISOLATION_REGRESS" --bindir="$PG_BINDIR" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=alerts_isolation \
    --inputdir=tests/isolation --outputdir="target/isolation-pg$v" --schedule=tests/isolation/schedule \
    || { head -200 "target/isolation-pg$v/regression.diffs" 2>/dev/null || true; return 1; }
}
part "isolation" isolation
if [ "${ALERTS_ROOT_SUITES:-}" = package ]; then
  part "remove the package (nothing left); install.sh refuses bad input" bash tests/shell/package.sh remove
  exit $status
fi
part "upgrade 0.1.0 and 0.2.0 -> current (objects equal a fresh install's)" \
  env ALERTS_UPGRADE_SUITE=0 bash tests/shell/upgrade.sh
part "dump and restore (both forms)" bash tests/shell/dump_restore.sh
part "random differential: ${ALERTS_DIFF_QUERIES:-1500} queries on every layout against Postgres' own plan" \
  python3 tests/shell/differential.py
[ "$v" -ge 18 ] && part "the extension outside the server's directories (extension_control_path), pg_regress" \
  bash tests/shell/control_path.sh
part "remove the package (nothing left); install.sh refuses bad input" bash tests/shell/package.sh remove
exit $status
