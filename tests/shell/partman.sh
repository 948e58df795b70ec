#!/usr/bin/env bash
# pg_partman's daily partitions under maintenance (issue 80): while
# `partman.run_maintenance()` creates a leaf ahead and drops the oldest one
# at each step, and a writer inserts new alerts, two clients page the table
# by `alerts_search` and by plain SQL bounded by `created_at` (the custom
# scan), each page checked against Postgres' own plan in the same snapshot
# (REPEATABLE READ). The parent declares `alerts_ulid_near` once, before
# `create_parent`, as docs/partitioned-tables.md says; nothing is done per
# leaf. Needs pg_partman on the server (Debian's postgresql-15-partman).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/shell/lib.sh
SECS=${ALERTS_PARTMAN_SECONDS:-30}
DB=alerts_partman
if [ "$(qa -d postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'")" != 1 ]; then
  fail "pg_partman is not installed for PostgreSQL $PG_VERSION (scripts/setup.sh installs postgresql-15-partman)"
fi
qa -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
PGOPTIONS="-c client_min_messages=warning" q -d "$DB" <<'SQL' >/dev/null
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE EXTENSION alerts;
CREATE TABLE alerts (
  id text COLLATE "C" NOT NULL,
  organisation_id text NOT NULL,
  attribute_values jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  PRIMARY KEY (id, created_at),
  CONSTRAINT alerts_id_near CHECK (alerts_ulid_near(id, created_at, interval '5 minutes'))
) PARTITION BY RANGE (created_at);
SELECT partman.create_parent('public.alerts', 'created_at', 'native', 'daily',
                             p_start_partition := (now() - interval '60 days')::date::text, p_premake := 4);
UPDATE partman.part_config SET retention = '58 days', retention_keep_table = false
 WHERE parent_table = 'public.alerts';
CALL alerts_enable('alerts');
SELECT alerts_index_command('alerts') \gexec
CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
-- 60 days of alerts, one every 40 s, for 4 tenants
INSERT INTO alerts (id, organisation_id, attribute_values, created_at)
SELECT alerts_ulid(t), 'org' || (g % 4),
       jsonb_build_object('team', 't' || (g % 5), 'service', 's' || (g % 300), 'env', 'e' || (g % 3)), t
FROM generate_series(1, 129000) g, LATERAL (SELECT now() - g * interval '40 seconds') x(t);
ANALYZE alerts;
-- One page by both paths and Postgres' own plan, in the caller's snapshot;
-- raises if they differ, returns the page's size.
CREATE FUNCTION pm_check(o int, f int, days int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  org text := 'org' || o;
  filter jsonb := (ARRAY['{}', '{"team": "t1"}', '{"service": "s7"}', '{"service": "s99", "env": "e1"}',
                         '{"team": "t2", "env": "e0"}', '{"service": "none"}'])[1 + f % 6]::jsonb;
  since timestamptz := now() - days * interval '1 day';
  q text := format('SELECT string_agg(id, %L ORDER BY id DESC) FROM (SELECT id FROM alerts WHERE organisation_id = %L '
                   'AND attribute_values @> %L AND created_at >= %L ORDER BY id DESC LIMIT 50) p', ',', org, filter, since);
  node text; own text; search text; n int;
BEGIN
  PERFORM set_config('alerts.custom_scan', 'on', true);
  EXECUTE q INTO node;
  PERFORM set_config('alerts.custom_scan', 'off', true);
  EXECUTE q INTO own;
  PERFORM set_config('alerts.custom_scan', 'on', true);
  SELECT string_agg(id, ',' ORDER BY id DESC), count(*) INTO search, n
    FROM alerts_search(NULL::alerts, org, filter, since, NULL, 50);
  IF node IS DISTINCT FROM own OR search IS DISTINCT FROM own THEN
    RAISE EXCEPTION 'pm_check(%, %, %): node % / search % / own plan %', o, f, days,
      left(node, 60), left(search, 60), left(own, 60);
  END IF;
  INSERT INTO pm_checked VALUES (n);
  RETURN n;
END $$;
CREATE UNLOGGED TABLE pm_checked (n int);
SQL
leaves0=$(qa -d "$DB" -c "SELECT count(*) FROM pg_partition_tree('alerts') WHERE isleaf")
work=$(mktemp -d); chmod 777 "$work"
cat > "$work/read.sql" <<'SQL'
\set o random(0, 3)
\set f random(0, 5)
\set d random(1, 70)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pm_check(:o, :f, :d);
END;
SQL
cat > "$work/write.sql" <<'SQL'
\set g random(1, 1000000)
INSERT INTO alerts (id, organisation_id, attribute_values, created_at)
SELECT alerts_ulid(now()), 'org' || (:g % 4),
       jsonb_build_object('team', 't' || (:g % 5), 'service', 's' || (:g % 300), 'env', 'e' || (:g % 3)), now()
FROM generate_series(1, 5);
SQL
# maintenance: each step premakes one more day and keeps one day less
( end=$((SECONDS + SECS)); step=0
  while [ $SECONDS -lt $end ]; do
    step=$((step + 1))
    qa -d "$DB" -c "UPDATE partman.part_config SET premake = premake + 1,
                      retention = (58 - $step) || ' days' WHERE parent_table = 'public.alerts'" \
       -c "SELECT partman.run_maintenance('public.alerts')" >/dev/null || { echo "maintenance failed"; exit 1; }
    sleep 0.5
  done; echo "$step" > "$work/steps" ) &
maint=$!
"$PG_BINDIR/pgbench" -n -d "$DB" -c 2 -T "$SECS" -f "$work/read.sql" > "$work/read.log" 2>&1 &
reads=$!
"$PG_BINDIR/pgbench" -n -d "$DB" -c 1 -T "$SECS" -f "$work/write.sql" > "$work/write.log" 2>&1 || fail "writer: $(tail -3 "$work/write.log")"
wait $reads || fail "a page differed or failed under maintenance: $(grep -m3 -E 'ERROR|aborted' "$work/read.log")"
wait $maint || fail "run_maintenance failed"
grep -q "aborted" "$work/read.log" && fail "a reader aborted: $(grep -m3 ERROR "$work/read.log")"
checked=$(qa -d "$DB" -c "SELECT count(*) || ' pages, ' || sum(n) || ' rows' FROM pm_checked")
leaves1=$(qa -d "$DB" -c "SELECT count(*) FROM pg_partition_tree('alerts') WHERE isleaf")
steps=$(cat "$work/steps")
[ "$steps" -ge 3 ] || fail "only $steps maintenance steps ran"
[ "$leaves1" != "$leaves0" ] || fail "maintenance changed no leaf ($leaves0 before and after)"
wrong=$(qa -d "$DB" -c "SELECT count(*) FROM alerts WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)")
[ "$wrong" = 0 ] || fail "$wrong rows with a wrong bitmap"
echo "  pg_partman daily: $steps maintenance steps ($leaves0 -> $leaves1 leaves, one made and one dropped a step),"
echo "  $checked checked by alerts_search and plain SQL against Postgres' own plan, every bitmap right"
rm -rf "$work"
qa -d postgres -c "DROP DATABASE $DB" >/dev/null
