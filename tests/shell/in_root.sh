#!/usr/bin/env bash
# The suites for a version served from a Debian root (17, 19), run inside
# it by scripts/root.sh: the extension built and installed there, a
# scratch cluster, then pg_regress (no Rust on PATH) and the isolation
# specs; the cluster is stopped whatever happens, so the root's mounts can
# be undone.
#   root.sh VERSION run bash tests/shell/in_root.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
v=${ALERTS_PG:?run through scripts/root.sh}
source scripts/pg.sh
pg_require
t=$SECONDS
bash scripts/install.sh
echo "--- built and installed in $((SECONDS - t)) s"
bash scripts/cluster.sh start
trap 'bash scripts/cluster.sh stop || true' EXIT
status=0
t=$SECONDS
bash tests/shell/regress.sh "target/regress-pg$v" || status=1
echo "--- pg_regress in $((SECONDS - t)) s"
t=$SECONDS
mkdir -p "target/isolation-pg$v"
env -i PATH="$PG_BINDIR:/usr/bin:/bin" LANG=C.UTF-8 \
  "$PG_ISOLATION_REGRESS" --bindir="$PG_BINDIR" \
  --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=alerts_isolation \
  --inputdir=tests/isolation --outputdir="target/isolation-pg$v" --schedule=tests/isolation/schedule \
  || { status=1; head -200 "target/isolation-pg$v/regression.diffs" 2>/dev/null || true; }
echo "--- isolation in $((SECONDS - t)) s"
exit $status
