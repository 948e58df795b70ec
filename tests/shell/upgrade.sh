#!/usr/bin/env bash
# The upgrade path: install the released 0.1.0 script (sql/alerts--0.1.0.sql),
# upgrade with ALTER EXTENSION alerts UPDATE, check that the extension's
# objects (definitions, volatility, comments, types) equal a fresh install's,
# then run the whole regression suite against the upgraded database.
# Needs the cluster of scripts/cluster.sh and the extension installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PGHOST=${PGHOST:-/tmp} PGPORT=${PGPORT:-5499} PGUSER=${PGUSER:-postgres}
PGXS=$(dirname "$(/usr/lib/postgresql/15/bin/pg_config --pgxs)")
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

for db in alerts_upgraded alerts_fresh; do
  dropdb --if-exists "$db"; createdb "$db"
done
q -d alerts_upgraded -c "CREATE EXTENSION alerts VERSION '0.1.0'"
q -d alerts_upgraded -c "ALTER EXTENSION alerts UPDATE"
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
describe alerts_upgraded > target/upgrade-upgraded.txt
describe alerts_fresh > target/upgrade-fresh.txt
if ! diff -u target/upgrade-fresh.txt target/upgrade-upgraded.txt; then
  echo "upgrade: 0.1.0 + ALTER EXTENSION UPDATE differs from a fresh install (diff above)"
  exit 1
fi
objects=$(psql -X -At -d alerts_fresh -c "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'alerts') AND deptype = 'e'")
echo "upgrade: 0.1.0 -> $(head -1 target/upgrade-fresh.txt): $objects objects identical to a fresh install"
dropdb alerts_fresh

mkdir -p target/regress-upgraded
"$PGXS/../test/regress/pg_regress" --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" \
  --use-existing --dbname=alerts_upgraded --inputdir=tests --outputdir=target/regress-upgraded \
  --schedule=tests/schedule || { head -100 target/regress-upgraded/regression.diffs; exit 1; }
dropdb alerts_upgraded
