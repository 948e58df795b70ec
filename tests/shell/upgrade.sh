#!/usr/bin/env bash
# The upgrade paths: install each released version's frozen script
# (sql/alerts--X.sql), upgrade with ALTER EXTENSION alerts UPDATE, check that
# the extension's objects (definitions, volatility, comments, types) equal a
# fresh install's (sql/alerts.sql), then run the suites of
# tests/schedule_upgraded (the whole tests/schedule with ALERTS_LONG=1)
# against the database upgraded from the oldest release (ALERTS_UPGRADE_SUITE=0
# skips that last part).
# Needs the cluster of scripts/cluster.sh and the extension installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh

RELEASED=(0.1.0 0.2.0)
dropdb --if-exists alerts_fresh; createdb alerts_fresh
q -d alerts_fresh -c "CREATE EXTENSION alerts"
describe() {  # every member object of the extension, with its full definition
  q -d "$1" -At <<'SQL'
SELECT e.extversion FROM pg_extension e WHERE e.extname = 'alerts';
SELECT pg_describe_object(d.classid, d.objid, 0)
       || ' | ' || coalesce(obj_description(d.objid, d.classid::regclass::name), '')
       || ' | ' || CASE
            WHEN d.classid = 'pg_proc'::regclass THEN pg_get_functiondef(d.objid)
            WHEN d.classid = 'pg_type'::regclass THEN (
                SELECT coalesce(string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum), '')
                FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0
                WHERE t.oid = d.objid)
            ELSE '' END
FROM pg_depend d
WHERE d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'alerts')
  AND d.deptype = 'e'
ORDER BY 1;
SQL
}
describe alerts_fresh > target/upgrade-fresh.txt
objects=$(psql -X -At -d alerts_fresh -c "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'alerts') AND deptype = 'e'")
dropdb alerts_fresh
for v in "${RELEASED[@]}"; do
  db=alerts_upgraded_${v//./_}
  dropdb --if-exists "$db"; createdb "$db"
  q -d "$db" -c "CREATE EXTENSION alerts VERSION '$v'"
  q -d "$db" -c "ALTER EXTENSION alerts UPDATE"
  describe "$db" > "target/upgrade-from-$v.txt"
  if ! diff -u target/upgrade-fresh.txt "target/upgrade-from-$v.txt"; then
    echo "upgrade: $v + ALTER EXTENSION UPDATE differs from a fresh install (diff above)"
    exit 1
  fi
  echo "upgrade: $v -> $(head -1 target/upgrade-fresh.txt): $objects objects identical to a fresh install"
  [ "$v" = "${RELEASED[0]}" ] || dropdb "$db"
done
# The suite on the upgraded database: once per test run (the first version,
# see scripts/test.sh); the object comparison above runs on every version.
if [ "${ALERTS_UPGRADE_SUITE:-1}" = 1 ]; then
  mkdir -p target/regress-upgraded
  schedule=tests/schedule_upgraded
  [ "${ALERTS_LONG:-0}" = 1 ] && schedule=tests/schedule
  "$PG_REGRESS" --bindir="$PG_BINDIR" --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" \
    --use-existing --dbname=alerts_upgraded_0_1_0 --inputdir=tests --outputdir=target/regress-upgraded \
    --schedule="$schedule" || { head -100 target/regress-upgraded/regression.diffs; exit 1; }
else
  echo "upgrade: the suite on the upgraded database ran on PostgreSQL ${ALERTS_UPGRADE_SUITE_PG:-15} in this run; here the objects are compared only"
fi
dropdb alerts_upgraded_0_1_0
