#!/usr/bin/env bash
# Scale-out: a Citus cluster (coordinator + 2 workers, scripts/citus.sh) with
# the alerts table hash-distributed by organisation_id, tenants on both
# workers. Through the coordinator, as users call it: alerts_search is exact
# (200 filters x page sizes x cursors against the exact filter, routed to
# the tenant's shard) with the walk alone, with GIN, with the tenant-keys
# index; each call is one routed statement; called on a worker it reads the
# local shard; COPY through the coordinator; shard moves and a rebalance
# under a search and write load; a join with a reference table; the trigger
# form (enable, rebuild, disable on the shards); tables it cannot serve and
# a worker without the extension get a clear error. Plain SQL (`@>` ORDER BY
# id DESC LIMIT n) through the coordinator: exact, the custom scan in the
# shard's plan; the random differential (differential.py) on distributed
# tables. The operators' part (COPY, moves, joins, the trigger form,
# refusals) is tests/shell/citus_operations.sh, sourced at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
export ALERTS_PG=15
source scripts/pg.sh
pg_require
db=alerts_citus_test
bash scripts/citus.sh start "$db" >/dev/null
C=${ALERTS_CITUS_PORT:-5450}; W1=$((C + 1)); W2=$((C + 2))
at() { local port=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -At -h /tmp -p "$port" -U postgres -d "$db" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS alerts, alerts_ref, alerts_by_source, alerts_tr, sources CASCADE;
DROP TYPE IF EXISTS alert_state, alert_origin CASCADE;
-- the definitions of the library installed now, on every node
DROP EXTENSION IF EXISTS alerts CASCADE;
CREATE EXTENSION alerts;
-- columns of types created here: routed pages carry them in binary (the
-- enum) or as text (a composite and an array of the enum, whose binary
-- forms hold OIDs that differ between nodes)
CREATE TYPE alert_state AS ENUM ('open', 'acknowledged', 'closed');
CREATE TYPE alert_origin AS (host text, port int);
CREATE TABLE alerts (
    id text COLLATE "C" NOT NULL,
    organisation_id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    source_id int NOT NULL,
    attribute_values jsonb NOT NULL DEFAULT '{}',
    state alert_state DEFAULT 'open',
    origin alert_origin DEFAULT ROW('host-1', 9100),
    history alert_state[] DEFAULT '{open,acknowledged}',
    PRIMARY KEY (organisation_id, id)
);
SELECT create_distributed_table('alerts', 'organisation_id');
-- a dropped column before the bitmap column: the coordinator puts routed
-- rows back into the table's row type
ALTER TABLE alerts ADD COLUMN dropped_later int;
ALTER TABLE alerts DROP COLUMN dropped_later;
-- 40,000 rows, 8 tenants of skewed sizes, skewed values, arrays, 5% heavy
-- rows (bloom false positives the recheck must drop)
SELECT setseed(0.77);
INSERT INTO alerts (id, organisation_id, created_at, source_id, attribute_values)
SELECT alerts_ulid(ts), 'org' || (floor(power(random(), 2) * 8))::int, ts, 1 + g % 5,
       jsonb_build_object('team', 't' || floor(power(random(), 3) * 30)::int,
                          'service', 's' || floor(random() * 100)::int,
                          'env', CASE WHEN random() < 0.7 THEN 'prod' ELSE 'staging' END,
                          'sev', 1 + floor(random() * 5)::int,
                          'feature', jsonb_build_array('f' || floor(random() * 20)::int, 'f' || floor(random() * 20)::int))
       || CASE WHEN random() < 0.001 THEN '{"rare": "needle"}'::jsonb ELSE '{}'::jsonb END
       || CASE WHEN random() < 0.05 THEN (SELECT jsonb_object_agg('tag' || i, 'v' || floor(random() * 1000)::int)
                                          FROM generate_series(1, 60 + g % 1) i) ELSE '{}'::jsonb END
FROM (SELECT g, timestamptz '2026-11-01' - random() * interval '200 days' AS ts FROM generate_series(1, 40000) g) s;
UPDATE alerts SET state = 'closed', origin = ROW('host-2', NULL), history = NULL WHERE source_id = 2;
SQL

echo "citus: enabling through the coordinator (generated column) and indexing the shards"
at "$C" -c "SET client_min_messages = warning" -c "CALL alerts_enable('alerts', form => 'generated')"
at "$C" -c "SELECT alerts_index_command('alerts')" | while read -r stmt; do at "$C" -c "$stmt"; done
at "$C" -c "VACUUM ANALYZE alerts"
wrong=$(at "$C" -c "SELECT count(*) FROM alerts WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)")
[ "$wrong" = 0 ] || fail "$wrong rows with a wrong bitmap after alerts_enable"
stats=$(at "$C" -c "SELECT rows || ' ' || rows_without_bitmap || ' ' || stale_bitmaps FROM alerts_bloom_stats('alerts')")
[ "$stats" = "40000 0 0" ] || fail "alerts_bloom_stats on the coordinator: $stats (want 40000 rows, 0 missing, 0 stale)"
nodes=$(at "$C" -c "SELECT count(DISTINCT p.nodeport) FROM (SELECT DISTINCT organisation_id FROM alerts) o,
                    pg_dist_shard_placement p WHERE p.shardid = get_shard_id_for_distribution_column('alerts', o.organisation_id)")
[ "$nodes" = 2 ] || fail "the tenants are on $nodes worker(s), want both"
page_idx=$(at "$W1" -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                        WHERE c.relname LIKE 'alerts\_1%' AND pg_get_indexdef(i.indexrelid) LIKE '%INCLUDE (attribute_values_bitmap)%'")
[ "$page_idx" -gt 0 ] || fail "worker 1's shards have no INCLUDE pagination index"
echo "  40000 rows, bitmaps correct, tenants on both workers, pagination index on the shards ($page_idx on worker 1)"

# The differential: the 200 filters page by page for every tenant against
# the exact filter (Postgres' containment, routed to the tenant's shard).
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS filters;
CREATE TABLE filters (n int PRIMARY KEY, f jsonb, since timestamptz);
SELECT setseed(0.31);
INSERT INTO filters
SELECT n, CASE n % 10
            WHEN 0 THEN '{"rare": "needle"}'
            WHEN 1 THEN jsonb_build_object('team', 'nope' || n)
            WHEN 2 THEN jsonb_build_object('service', jsonb_build_array('s' || floor(random() * 100)::int, 's' || floor(random() * 100)::int))
            WHEN 3 THEN '{}'
            WHEN 4 THEN jsonb_build_object('feature', 'f' || floor(random() * 20)::int, 'env', 'staging')
            WHEN 5 THEN jsonb_build_object('team', jsonb_build_array('t0', 't' || floor(random() * 30)::int), 'sev', 1 + n % 5)
            WHEN 6 THEN jsonb_build_object('team', 't' || floor(power(random(), 3) * 30)::int, 'service', 's' || floor(random() * 100)::int)
            WHEN 7 THEN jsonb_build_object('tag' || (1 + n % 60), 'v' || floor(random() * 1000)::int)
            WHEN 8 THEN jsonb_build_object('env', 'prod')
            ELSE jsonb_build_object('team', 't' || floor(power(random(), 3) * 30)::int) END,
       CASE n % 3 WHEN 0 THEN '-infinity' ELSE timestamptz '2026-11-01' - (20 + random() * 150) * interval '1 day' END
FROM generate_series(1, 200) n;
-- the exact answer: jsonb containment, one alternative of a list at a time
CREATE OR REPLACE FUNCTION citus_oracle(o text, f jsonb, since timestamptz) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
BEGIN
    EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id DESC), ''{}'') FROM alerts
                    WHERE organisation_id = %L AND id >= %L AND (%s)', o, alerts_ulid_floor(since),
                   (SELECT coalesce(string_agg('(' || (
                        SELECT coalesce(string_agg(format('attribute_values @> %L OR attribute_values @> %L',
                               jsonb_build_object(c.key, alt), jsonb_build_object(c.key, jsonb_build_array(alt))), ' OR '), 'false')
                        FROM jsonb_array_elements(CASE jsonb_typeof(c.value) WHEN 'array' THEN c.value
                                                       ELSE jsonb_build_array(c.value) END) alt) || ')', ' AND '), 'true')
                    FROM jsonb_each(f) c))
        INTO ids;
    RETURN ids;
END $$;
CREATE OR REPLACE FUNCTION citus_differential(max_pages int)
RETURNS TABLE (filters bigint, pages bigint, mismatched_pages bigint) LANGUAGE plpgsql AS $$
DECLARE
    r record; o text; oracle text[]; page text[]; cursor_id text; n int; size int;
    total_pages bigint := 0; bad bigint := 0; checked bigint := 0;
BEGIN
    FOR o IN SELECT DISTINCT organisation_id FROM alerts ORDER BY 1 LOOP
        FOR r IN SELECT * FROM filters fl WHERE fl.n % 8 = substr(o, 4)::int % 8 OR fl.n % 4 = 0 ORDER BY fl.n LOOP
            size := (ARRAY[50, 1, 7, 500])[1 + r.n % 4];
            oracle := citus_oracle(o, r.f, r.since);
            cursor_id := NULL; n := 0;
            LOOP
                SELECT coalesce(array_agg(s.id ORDER BY s.ordinality), '{}') INTO page
                FROM alerts_search(NULL::alerts, o, r.f, r.since, cursor_id, size) WITH ORDINALITY s;
                IF page IS DISTINCT FROM coalesce(oracle[n * size + 1 : n * size + size], '{}') THEN
                    bad := bad + 1;
                END IF;
                n := n + 1;
                EXIT WHEN cardinality(page) < size OR n >= max_pages;
                cursor_id := page[size];
            END LOOP;
            total_pages := total_pages + n; checked := checked + 1;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT checked, total_pages, bad;
END $$;
SQL
differential() {  # LABEL
  local out nf np nbad
  out=$(at "$C" -c "SELECT filters || ' ' || pages || ' ' || mismatched_pages FROM citus_differential(6)")
  read -r nf np nbad <<<"$out"
  [ "$nbad" = 0 ] || fail "$1: $nbad of $np pages differ from the exact filter"
  [ "$np" -gt 500 ] || fail "$1: only $np pages checked"
  echo "  $1: $nf tenant x filter pairs, $np pages, all equal to the exact filter"
}
echo "citus: alerts_search through the coordinator, exact"
differential "walk only"
at "$C" -c "CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops)"
differential "with GIN"
at "$C" -c "CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values))"
differential "with GIN and the tenant-keys index"

# Plain SQL through the coordinator: Citus routes the tenant's query to its
# shard, and the worker plans the shard query with the custom scan when the
# library is loaded there (session_preload_libraries on every node, as the
# README says). The same 200 filters, page by page with a keyset cursor
# (`id < last`) and the filter's lower bound (`id >= floor`), equal the
# exact filter; the tasks' plans show the node.
echo "citus: plain SQL (@> ORDER BY id DESC LIMIT n) through the coordinator"
# (Citus propagates ALTER DATABASE ... SET to the workers, and refuses it on one)
at "$C" -c "ALTER DATABASE $db SET session_preload_libraries = 'alerts'"
for node in "$W1" "$W2"; do
  [ "$(at "$node" -c "SHOW session_preload_libraries")" = alerts ] || fail "session_preload_libraries did not reach the worker on port $node"
done
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE OR REPLACE FUNCTION citus_plain_differential(max_pages int)
RETURNS TABLE (filters bigint, pages bigint, mismatched_pages bigint, node_plans bigint) LANGUAGE plpgsql AS $$
DECLARE
    r record; o text; oracle text[]; page text[]; cursor_id text; n int; size int; line text;
    total_pages bigint := 0; bad bigint := 0; checked bigint := 0; with_node bigint := 0;
    q text := 'SELECT coalesce(array_agg(id), ''{}'') FROM (SELECT id FROM alerts
               WHERE organisation_id = $1 AND attribute_values @> $2 AND id >= $3 AND id < $4
               ORDER BY id DESC LIMIT $5) p';
BEGIN
    FOR o IN SELECT DISTINCT organisation_id FROM alerts ORDER BY 1 LOOP
        FOR r IN SELECT * FROM filters fl WHERE fl.n % 8 = substr(o, 4)::int % 8 OR fl.n % 4 = 0 ORDER BY fl.n LOOP
            size := (ARRAY[50, 1, 7, 500])[1 + r.n % 4];
            oracle := citus_oracle(o, r.f, r.since);
            -- a list in a filter means one of its values; plain @> means
            -- all of them: the plain query is given one alternative
            -- (the first) of each list, and its oracle is filtered the same
            r.f := (SELECT coalesce(jsonb_object_agg(c.key, CASE jsonb_typeof(c.value) WHEN 'array' THEN c.value -> 0 ELSE c.value END), '{}')
                    FROM jsonb_each(r.f) c);
            EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id DESC), ''{}'') FROM alerts
                            WHERE id = ANY (%L) AND attribute_values @> %L', oracle, r.f) INTO oracle;
            FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q USING o, r.f, alerts_ulid_floor(r.since), chr(1114111), size LOOP
                IF line LIKE '%Custom Scan (AlertsSearch) on alerts_1%' THEN with_node := with_node + 1; END IF;
            END LOOP;
            cursor_id := chr(1114111); n := 0;
            LOOP
                EXECUTE q INTO page USING o, r.f, alerts_ulid_floor(r.since), cursor_id, size;
                IF page IS DISTINCT FROM coalesce(oracle[n * size + 1 : n * size + size], '{}') THEN
                    bad := bad + 1;
                END IF;
                n := n + 1;
                EXIT WHEN cardinality(page) < size OR n >= max_pages;
                cursor_id := page[size];
            END LOOP;
            total_pages := total_pages + n; checked := checked + 1;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT checked, total_pages, bad, with_node;
END $$;
SQL
out=$(at "$C" -c "SELECT filters || ' ' || pages || ' ' || mismatched_pages || ' ' || node_plans FROM citus_plain_differential(6)")
read -r nf np nbad nnode <<<"$out"
[ "$nbad" = 0 ] || fail "plain SQL through the coordinator: $nbad of $np pages differ from the exact filter"
[ "$np" -gt 500 ] || fail "plain SQL through the coordinator: only $np pages checked"
# the planner may keep its own plan where it costs less (a filter nearly
# every row of the tenant matches, with a page of 500): most use the node
[ "$nnode" -gt $((nf * 3 / 4)) ] || fail "plain SQL through the coordinator: the shard's plan has the node for $nnode of $nf filters"
echo "  $nf tenant x filter pairs, $np pages, all equal to the exact filter; the task's plan has the node for $nnode of them"
# (not SELECT *: Citus 13.2's EXPLAIN ANALYZE fails on this table's composite
# column `origin` with or without the node, "invalid input syntax for type
# timestamp with time zone", its binary transfer of the task's rows)
plan=$(at "$C" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
                   SELECT id, created_at, attribute_values, state, history FROM alerts WHERE organisation_id = 'org1' AND attribute_values @> '{\"env\": \"staging\", \"sev\": 3}'
                   ORDER BY id DESC LIMIT 50")
grep -q "Custom Scan (AlertsSearch) on alerts_1" <<<"$plan" && grep -q "Route:" <<<"$plan" && grep -q "Routes Taken:" <<<"$plan" \
  || fail "EXPLAIN ANALYZE through the coordinator: no AlertsSearch node with its route in the task's plan:
$plan"
echo "  EXPLAIN ANALYZE through the coordinator shows the node on the shard, with its route:"
grep -E "Custom Scan|Task Count|Node:|Route|Rows Rechecked" <<<"$plan" | sed 's/^/    /'
# a prepared statement on the coordinator, generic plan: Citus routes each
# execution, the worker plans the node; the rows equal a query the node
# cannot take (no ORDER BY under the OFFSET 0 fence)
prep="SET plan_cache_mode = force_generic_plan;
PREPARE p(text, jsonb, int) AS SELECT id FROM alerts WHERE organisation_id = \$1 AND attribute_values @> \$2 ORDER BY id DESC LIMIT \$3;"
gen=$(at "$C" <<<"$prep
EXPLAIN (COSTS OFF) EXECUTE p('org3', '{\"env\": \"staging\"}', 20);")
grep -q "Custom Scan (AlertsSearch) on alerts_1" <<<"$gen" || fail "prepared statement, generic plan, through the coordinator: no node in the task's plan: $gen"
for org in org0 org3 org6; do
  got=$(at "$C" <<<"$prep
EXECUTE p('$org', '{\"env\": \"staging\"}', 20); EXECUTE p('$org', '{\"env\": \"staging\"}', 20); EXECUTE p('$org', '{\"env\": \"staging\"}', 20);
EXECUTE p('$org', '{\"env\": \"staging\"}', 20); EXECUTE p('$org', '{\"env\": \"staging\"}', 20); EXECUTE p('$org', '{\"env\": \"staging\"}', 20);" | tail -20)
  want=$(at "$C" -c "SELECT id FROM (SELECT id FROM alerts WHERE organisation_id = '$org' AND attribute_values @> '{\"env\": \"staging\"}' OFFSET 0) x
                     ORDER BY id DESC LIMIT 20")
  [ -n "$got" ] && [ "$got" = "$want" ] || fail "prepared statement, 6th generic execution for $org: rows differ from the exact filter"
done
echo "  a prepared statement on generic plans (6 executions, 3 tenants): exact, the node in the task's plan"
# oldest first (ORDER BY id ASC): the worker's node reads the shard upward
for org in org1 org4; do
  q="SELECT id FROM alerts WHERE organisation_id = '$org' AND attribute_values @> '{\"env\": \"staging\"}' ORDER BY id LIMIT 30"
  asc_plan=$(at "$C" -c "EXPLAIN (COSTS OFF) $q")
  grep -q "Order: oldest first" <<<"$asc_plan" || fail "oldest first through the coordinator: no node reading upward in the task's plan: $asc_plan"
  got=$(at "$C" -c "$q")
  want=$(at "$C" -c "SELECT id FROM (SELECT id FROM alerts WHERE organisation_id = '$org' AND attribute_values @> '{\"env\": \"staging\"}' OFFSET 0) x
                     ORDER BY id LIMIT 30")
  [ -n "$got" ] && [ "$got" = "$want" ] || fail "oldest first through the coordinator for $org: rows differ from the exact filter"
done
echo "  oldest first (ORDER BY id ASC, 2 tenants): exact, the node reading upward in the task's plan"

# The planner hook asks Citus' catalog whether a table is distributed
# (p.logicalrelid = $1, regclass = oid): with a search_path whose first
# schema has its own `=` for those types, planning plain SQL on a local
# table of a Citus database must not call it (issue 39, finding 9).
echo "citus: plain SQL planned under a hostile search_path (the hook's catalog read)"
hostile=$(at "$C" 2>&1 <<'SQL'
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS hostile CASCADE;
CREATE SCHEMA hostile;
CREATE FUNCTION hostile.eq(regclass, oid) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hostile = called'; END $$;
CREATE OPERATOR hostile.= (LEFTARG = regclass, RIGHTARG = oid, FUNCTION = hostile.eq);
DROP TABLE IF EXISTS alerts_local;
CREATE TABLE alerts_local (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
                           attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE INDEX ON alerts_local (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO alerts_local SELECT id, organisation_id, attribute_values, alerts_bloom(attribute_values) FROM alerts LIMIT 2000;
ANALYZE alerts_local;
LOAD 'alerts';
SET search_path = hostile, public, pg_catalog;
EXPLAIN (COSTS OFF) SELECT id FROM alerts_local WHERE organisation_id = 'org1' AND attribute_values @> '{"team": "t1"}'
ORDER BY id DESC LIMIT 5;
RESET search_path;
DROP TABLE alerts_local;
DROP SCHEMA hostile CASCADE;
SQL
) || fail "planning plain SQL under a hostile search_path failed: $hostile"
grep -q "AlertsSearch" <<<"$hostile" || fail "plain SQL on a local table of a Citus database: no node: $hostile"
echo "  planned with the node, the hostile operator never called"

# One routed statement per call: Citus logs every command it sends to a
# worker; a call sends one, whatever the walk does on the worker, alone or
# in a transaction block. alerts_search is not a Citus distributed function
# (see the README): Citus delegates nothing, the call routes itself.
echo "citus: one round trip per call"
log_call() {  # PORT TENANT [SQL before the call]: the commands the call sends to other nodes
  at "$1" -c "SET citus.log_remote_commands = on" -c "SET client_min_messages = log" -c "${3:-SELECT 1}" \
    -c "SELECT count(*) FROM alerts_search(NULL::alerts, '$2', '{\"env\": \"prod\"}')" -c "COMMIT" 2>&1 | grep -E "issuing .*alerts_(search|attrs_match)" || true
}
for before in "SELECT 1" BEGIN; do
  sent_now=$(log_call "$C" org1 "$before")
  [ "$(grep -c . <<<"$sent_now")" = 1 ] && grep -q "public.alerts_attrs_match(attribute_values" <<<"$sent_now" \
    || fail "a call on the coordinator (after $before) sent, want one routed statement: $sent_now"
done
echo "  a call on the coordinator sends one statement to the tenant's worker, alone or in a transaction block"
# the routed page's rows are the table's rows, every column (the table has
# a dropped column before the bitmap)
want=$(at "$C" -c "SELECT md5(string_agg(a::text, '|' ORDER BY a.id DESC))
                   FROM (SELECT * FROM alerts WHERE organisation_id = 'org1' ORDER BY id DESC LIMIT 500) a")
got=$(at "$C" -c "SELECT md5(string_agg(s::text, '|' ORDER BY s.id DESC))
                  FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', NULL, 500) s")
[ "$got" = "$want" ] || fail "routed rows differ from the table's rows (whole-row text)"
echo "  routed rows equal the table's rows, column for column"
# A tenant the session keeps calling gets statements with its value written
# in (src/search/routed.rs): Citus then sends the shard's query without
# writing it anew each call. The fourth call of a session sends the
# tenant's own statement; 40 tenants x 5 rounds (more tenants than a table keeps
# statements for, so some lose theirs and get them again), first and next
# pages, equal to the exact filter.
call_org1="SELECT count(*) FROM alerts_search(NULL::alerts, 'org1', '{\"env\": \"prod\"}')"
sent_4th=$(at "$C" -c "$call_org1" -c "$call_org1" -c "$call_org1" \
  -c "SET citus.log_remote_commands = on" -c "SET client_min_messages = log" \
  -c "$call_org1" 2>&1 | grep -E "issuing .*alerts_attrs_match" || true)
# (the shared statement's calls are sent with every value written in, the
# tenant's own with the filter, window and size as parameters)
grep -q "organisation_id OPERATOR(pg_catalog.=) 'org1'::text) AND public.alerts_attrs_match(attribute_values, \$1)" <<<"$sent_4th" \
  || fail "the fourth call of a tenant was not sent by its own statement: $sent_4th"
at "$C" >/dev/null <<'SQL'
INSERT INTO alerts (id, organisation_id, created_at, source_id, attribute_values)
SELECT alerts_ulid(ts), 'many' || (g % 40), ts, 1, jsonb_build_object('env', CASE WHEN g % 3 = 0 THEN 'prod' ELSE 'staging' END)
FROM (SELECT g, timestamptz '2026-11-01' - g * interval '1 hour' AS ts FROM generate_series(1, 1200) g) s;
SQL
out=$(at "$C" 2>&1 <<'SQL'
DO $$
DECLARE a text[]; b text[]; cur text; pages int := 0;
BEGIN
  FOR r IN 1..5 LOOP
    FOR t IN 0..39 LOOP
      cur := NULL;
      FOR p IN 1..3 LOOP
        SELECT array_agg(id ORDER BY id DESC) INTO a
          FROM alerts_search(NULL::alerts, 'many' || t, '{"env": "prod"}', '-infinity', cur, 4);
        SELECT array_agg(id ORDER BY id DESC) INTO b
          FROM (SELECT id FROM alerts WHERE organisation_id = 'many' || t AND attribute_values @> '{"env": "prod"}'
                  AND (cur IS NULL OR id < cur) ORDER BY id DESC LIMIT 4) s;
        IF a IS DISTINCT FROM b THEN
          RAISE EXCEPTION 'tenant many%, round %, page %: % against %', t, r, p, a, b;
        END IF;
        pages := pages + 1;
        cur := a[4];
        EXIT WHEN cur IS NULL;
      END LOOP;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'pages: %', pages;
END $$;
SQL
) || fail "a session's repeated calls of 40 tenants: $out"
at "$C" -c "DELETE FROM alerts WHERE organisation_id LIKE 'many%'" >/dev/null
echo "  a tenant's fourth call sends it written in; 40 tenants x 5 rounds in one session, $(grep -o '[0-9]*$' <<<"$out") pages, all exact"
# A session's routed statements name the table's columns: after a column
# is added or dropped they are made again, and the session's next pages
# have the table's rows as they are now (they raised "came back with other
# columns" until the session ended).
page_md5="SELECT md5(string_agg(s::text, '|' ORDER BY s.id DESC)) FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', NULL, 60) s"
rows_md5="SELECT md5(string_agg(a::text, '|' ORDER BY a.id DESC)) FROM (SELECT * FROM alerts WHERE organisation_id = 'org1' ORDER BY id DESC LIMIT 60) a"
out=$(at "$C" -c "$page_md5" -c "$page_md5" -c "$page_md5" -c "$page_md5" -c "$rows_md5" \
  -c "ALTER TABLE alerts ADD COLUMN added_later int DEFAULT 7" -c "$page_md5" -c "$rows_md5" \
  -c "ALTER TABLE alerts DROP COLUMN added_later" -c "$page_md5" -c "$rows_md5" 2>&1) \
  || fail "pages after a column was added and dropped: $out"
mapfile -t md5s <<<"$out"
[ "${md5s[3]}" = "${md5s[4]}" ] && [ "${md5s[5]}" = "${md5s[6]}" ] && [ "${md5s[7]}" = "${md5s[8]}" ] \
  && [ "${md5s[4]}" != "${md5s[6]}" ] || fail "pages after a column was added and dropped differ from the table's rows: $out"
echo "  a session's pages after a column is added and dropped: the table's rows as they are now"
# a column filter crosses with the call and is resolved on the shard by
# name (the shard has no dropped column: its column numbers differ)
want=$(at "$C" -c "SELECT md5(string_agg(a::text, '|' ORDER BY a.id DESC))
                   FROM (SELECT * FROM alerts WHERE organisation_id = 'org1' AND source_id IN (2, 4) AND state IN ('open', 'closed')
                         ORDER BY id DESC LIMIT 300) a")
cols_sql="SELECT md5(string_agg(s::text, '|' ORDER BY s.id DESC))
          FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', NULL, 300, columns => '{\"source_id\": [2, 4], \"state\": [\"open\", \"closed\"]}') s"
for node in "$C" "$W1" "$W2"; do
  [ "$(at "$node" -c "$cols_sql")" = "$want" ] || fail "column filter through node $node: rows differ from the SQL filter"
done
err=$(at "$C" -c "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}', columns => '{\"nope\": 1}')" 2>&1 || true)
grep -q 'column "nope" of columns does not exist in table alerts' <<<"$err" || fail "unknown column through the coordinator: $err"
echo "  column filters: same rows as the SQL filter through the coordinator and both workers; unknown column refused"
# alerts_search_wire called as a statement on each node: the same bytes
# whether the node walks the shard or routes the call on (the page of rows
# the routed statement returns, encoded where it arrives)
for cols in "NULL" "'{\"source_id\": [2, 4]}'"; do
  wire_sql="SELECT md5(alerts_search_wire(NULL::alerts, 'org1', '{\"team\": \"t1\"}', '-infinity', NULL, 80, $cols))"
  w=$(at "$C" -c "$wire_sql")
  [ -n "$w" ] && [ "$(at "$W1" -c "$wire_sql")" = "$w" ] && [ "$(at "$W2" -c "$wire_sql")" = "$w" ] \
    || fail "alerts_search_wire (columns $cols) differs between the nodes"
done
echo "  alerts_search_wire: the same page on the coordinator and both workers"

# On a worker: tenants whose shard it holds are read from the local shard;
# the others are routed on from there. Both equal the coordinator's pages.
echo "citus: alerts_search called on a worker"
vals=$(at "$C" -c "SELECT string_agg(format('(%s, %L::jsonb, %L::timestamptz)', n, f, since), ', ') FROM filters WHERE n <= 40")
pages_sql="SELECT md5(string_agg(s.id, ',' ORDER BY o.org, f.n, s.id DESC))
FROM (VALUES ('org0'), ('org1'), ('org2'), ('org3'), ('org4'), ('org5'), ('org6'), ('org7')) o(org), (VALUES $vals) f(n, f, since),
     LATERAL alerts_search(NULL::alerts, o.org, f.f, f.since, NULL, 30) s"
want=$(at "$C" -c "$pages_sql")
for w in "$W1" "$W2"; do
  [ "$(at "$w" -c "$pages_sql")" = "$want" ] || fail "worker $w: pages differ from the coordinator's"
done
local_calls=$(at "$W1" -c "SELECT count(*) FROM (VALUES ('org0'), ('org1'), ('org2'), ('org3'), ('org4'), ('org5'), ('org6'), ('org7')) o(org)
                           WHERE EXISTS (SELECT 1 FROM pg_dist_placement p WHERE p.shardid = get_shard_id_for_distribution_column('alerts', o.org)
                                           AND p.groupid = (SELECT groupid FROM pg_dist_local_group))")
[ "$local_calls" -gt 0 ] && [ "$local_calls" -lt 8 ] || fail "worker $W1 holds $local_calls of the 8 tenants' shards"
# on the worker: a tenant of a local shard sends nothing on, another one
# statement (to the worker that has it)
sent() {  # TENANT: statements the call on worker 1 sends to other nodes
  log_call "$W1" "$1" | grep -c . || true
}
mine=$(at "$W1" -c "SELECT o FROM unnest(ARRAY['org0','org1','org2','org3','org4','org5','org6','org7']) o
                    WHERE EXISTS (SELECT 1 FROM pg_dist_placement p WHERE p.shardid = get_shard_id_for_distribution_column('alerts', o)
                                    AND p.groupid = (SELECT groupid FROM pg_dist_local_group)) LIMIT 1")
theirs=$(at "$W1" -c "SELECT o FROM unnest(ARRAY['org0','org1','org2','org3','org4','org5','org6','org7']) o
                      WHERE NOT EXISTS (SELECT 1 FROM pg_dist_placement p WHERE p.shardid = get_shard_id_for_distribution_column('alerts', o)
                                          AND p.groupid = (SELECT groupid FROM pg_dist_local_group)) LIMIT 1")
[ "$(sent "$mine")" = 0 ] || fail "worker $W1: a call for $mine (local shard) sent statements to other nodes"
[ "$(sent "$theirs")" = 1 ] || fail "worker $W1: a call for $theirs (shard elsewhere) did not send one statement"
echo "  both workers give the coordinator's pages for every tenant: from the local shard (no statement sent) or routed on (one)"

# a spoofed application_name (tests/shell/citus_spoof.sh)
source tests/shell/citus_spoof.sh

# The random differential (tests/shell/differential.py) on distributed
# tables: plain SQL with the custom scan on the workers and alerts_search,
# through the coordinator, against the same statements with it off there.
echo "citus: random differential through the coordinator"
ALERTS_DIFF_CITUS=1 ALERTS_DIFF_DB="$db" PGPORT="$C" ALERTS_DIFF_QUERIES="${ALERTS_DIFF_CITUS_QUERIES:-1000}" \
  target/pyenv/bin/python tests/shell/differential.py | sed 's/^/  /' || fail "the random differential on Citus"

# COPY, shard moves, joins, the trigger form, refusals
source tests/shell/citus_operations.sh

echo "citus: ok"
