# Sourced by tests/shell/citus.sh, after its differential and routing
# checks, with its cluster, table and helpers (at, fail, differential):
# what operators do to a distributed alert table. COPY through the
# coordinator; shard moves and a rebalance under a search and write load,
# and one session following its tenant's shard across moves; a join with
# a reference table; the trigger form on the shards; tables it cannot
# serve and a worker without the extension get a clear error.

# COPY through the coordinator: bitmaps computed on the shards, pages exact.
echo "citus: COPY through the coordinator"
at "$C" -c "COPY (SELECT alerts_ulid(timestamptz '2026-11-02' + g * interval '1 second'), 'org' || g % 8, timestamptz '2026-11-02', 1,
                    jsonb_build_object('team', 'copied', 'n', g) FROM generate_series(1, 2000) g) TO STDOUT" \
  | at "$C" -c "COPY alerts (id, organisation_id, created_at, source_id, attribute_values) FROM STDIN"
copied=$(at "$C" -c "SELECT count(*) FROM alerts WHERE attribute_values @> '{\"team\": \"copied\"}' AND attribute_values_bitmap = alerts_bloom(attribute_values)")
[ "$copied" = 2000 ] || fail "COPY: $copied of 2000 rows with a right bitmap"
got=$(at "$C" -c "SELECT count(*) FROM alerts_search(NULL::alerts, 'org3', '{\"team\": \"copied\"}', '-infinity', NULL, 1000)")
[ "$got" = 250 ] || fail "COPY: alerts_search found $got of org3's 250 copied rows"
echo "  2000 rows copied, bitmaps right, found by alerts_search"

# Shard moves and a rebalance while searches and writes run: searches of a
# tenant being moved stay exact, writers keep writing (a write may wait for
# the move's final catch-up, never fail), bitmaps and indexes arrive intact.
echo "citus: shard moves and a rebalance under a search and write load"
mkdir -p target/citus; rm -f target/citus/stop
moved=org1
shard=$(at "$C" -c "SELECT get_shard_id_for_distribution_column('alerts', '$moved')")
src=$(at "$C" -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $shard")
dst=$([ "$src" = "$W1" ] && echo "$W2" || echo "$W1")
check_sql="SELECT CASE WHEN array(SELECT id FROM alerts_search(NULL::alerts, '$moved', '{\"env\": \"staging\"}', '-infinity', NULL, 40))
                      = array(SELECT id FROM alerts WHERE organisation_id = '$moved' AND attribute_values @> '{\"env\": \"staging\"}'
                              ORDER BY id DESC LIMIT 40) THEN 'ok' ELSE 'WRONG' END"
( for _ in $(seq 1 100000); do
    [ -e target/citus/stop ] && break
    at "$C" -c "$check_sql" 2>&1 | head -1
  done > target/citus/searches.log ) &
searcher=$!
( i=0; for _ in $(seq 1 100000); do
    [ -e target/citus/stop ] && break
    i=$((i + 1))
    at "$C" -c "INSERT INTO alerts (id, organisation_id, created_at, source_id, attribute_values)
                VALUES (alerts_ulid(), 'org' || ($i % 8 + 2) % 8, now(), 1, '{\"env\": \"moving\", \"w\": $i}')" 2>&1 | head -1
    [ "${PIPESTATUS[0]}" = 0 ] && echo written
  done > target/citus/writes.log ) &
writer=$!
sleep 2
at "$C" -c "SELECT citus_move_shard_placement($shard, '127.0.0.1', $src, '127.0.0.1', $dst)" >/dev/null
[ "$(at "$C" -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $shard")" = "$dst" ] || fail "the shard of $moved did not move"
# a second shard moved the same way leaves the workers unbalanced: the
# rebalancer then has moves to make
other=$(at "$C" -c "SELECT shardid FROM pg_dist_shard_placement JOIN pg_dist_shard USING (shardid)
                    WHERE logicalrelid = 'alerts'::regclass AND nodeport = $src ORDER BY shardid LIMIT 1")
at "$C" -c "SELECT citus_move_shard_placement($other, '127.0.0.1', $src, '127.0.0.1', $dst)" >/dev/null
job=$(at "$C" -c "SELECT citus_rebalance_start(rebalance_strategy := 'by_shard_count', shard_transfer_mode := 'force_logical')" 2>&1 | tail -1)
[[ "$job" =~ ^[0-9]+$ ]] || fail "the rebalancer had nothing to do: $job"
at "$C" -c "SELECT citus_rebalance_wait()" >/dev/null
sleep 1
touch target/citus/stop
wait "$searcher" "$writer"
rm -f target/citus/stop
searches=$(grep -c . target/citus/searches.log || true)
oks=$(grep -c '^ok$' target/citus/searches.log || true)
written=$(grep -c '^written$' target/citus/writes.log || true)
[ "$oks" = "$searches" ] && [ "$searches" -gt 10 ] \
  || fail "during the moves $oks of $searches searches were exact: $(grep -v '^ok$' target/citus/searches.log | sort | uniq -c | head -3)"
[ "$(grep -vc '^written$' target/citus/writes.log || true)" = 0 ] \
  || fail "writes failed during the moves: $(grep -v '^written$' target/citus/writes.log | sort | uniq -c | head -3)"
[ "$(at "$C" -c "SELECT count(*) FROM alerts WHERE attribute_values @> '{\"env\": \"moving\"}'")" = "$written" ] \
  || fail "$written writes acknowledged, a different number of rows found"
wrong=$(at "$C" -c "SELECT count(*) FROM alerts WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)")
[ "$wrong" = 0 ] || fail "$wrong rows with a wrong bitmap after the moves"
idx=$(at "$dst" -c "SET citus.override_table_visibility = off" -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'alerts_$shard'
                    AND (indexdef LIKE '%INCLUDE (attribute_values_bitmap)%' OR indexdef LIKE '%alerts_keys(%' OR indexdef LIKE '%gin (attribute_values jsonb_path_ops)%')")
[ "$idx" = 3 ] || fail "the moved shard has $idx of its 3 indexes on node $dst"
differential "after the moves"
echo "  shard of $moved and another moved $src -> $dst, then rebalanced (job $job): $searches searches all exact, $written writes, bitmaps and indexes intact"

# A session remembers where each tenant's shard is (until Citus' catalog
# changes): one session on the coordinator and one on the node holding the
# shard search, the shard moves away and back between their searches, and
# every page stays exact (read locally, then routed, then local again).
echo "citus: one session's searches follow its tenant's shard across moves"
here=$(at "$C" -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $shard")
there=$([ "$here" = "$W1" ] && echo "$W2" || echo "$W1")
# each move is followed by a new row of the tenant (a stale read of the
# placement left behind would miss it)
move() { echo "\\! psql -X -q -At -h /tmp -p $C -U postgres -d $db -c \"CALL citus_cleanup_orphaned_resources()\" -c \"SELECT citus_move_shard_placement($shard, '127.0.0.1', $1, '127.0.0.1', $2, shard_transfer_mode := 'force_logical')\" -c \"INSERT INTO alerts (id, organisation_id, created_at, source_id, attribute_values) VALUES (alerts_ulid(), '$moved', now(), 1, '{\\\"env\\\": \\\"staging\\\"}')\" >/dev/null"; }
for node in "$C" "$here"; do
  got=$(at "$node" <<SQL
$check_sql;
$(move "$here" "$there")
$check_sql;
$(move "$there" "$here")
$check_sql;
SQL
)
  [ "$(echo $got)" = "ok ok ok" ] || fail "a session on node $node across moves of $moved's shard: $(echo $got)"
done
echo "  sessions on the coordinator and on node $here: exact before, during and after two moves each"

# What users do with a page: join it with a reference table of sources.
echo "citus: a page joined with a reference table"
at "$C" >/dev/null <<'SQL'
CREATE TABLE sources (id int PRIMARY KEY, name text NOT NULL);
SELECT create_reference_table('sources');
INSERT INTO sources SELECT g, 'source ' || g FROM generate_series(1, 5) g;
SQL
joined=$(at "$C" -c "SELECT count(*) || ' ' || count(s.name) FROM alerts_search(NULL::alerts, 'org2', '{\"env\": \"prod\"}', '-infinity', NULL, 50) p
                     JOIN sources s ON s.id = p.source_id")
[ "$joined" = "50 50" ] || fail "join with a reference table: $joined"
joined=$(at "$C" -c "WITH page AS (SELECT * FROM alerts_search(NULL::alerts, 'org2', '{\"env\": \"prod\"}', '-infinity', NULL, 50))
                     SELECT count(*) FROM page p LEFT JOIN sources s ON s.id = p.source_id WHERE s.name IS NOT NULL")
[ "$joined" = 50 ] || fail "join in a CTE with a reference table: $joined"
echo "  50 rows joined with their source, in FROM and through a CTE"

# The trigger form: refused without the setting Citus asks for, then
# enabled with it (the backfill batches run on every shard placement), kept
# current on writes through the coordinator, rebuilt, disabled.
echo "citus: the trigger form (alerts_enable, alerts_rebuild, alerts_disable)"
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS alerts_tr;
CREATE TABLE alerts_tr (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
                        attribute_values jsonb NOT NULL, PRIMARY KEY (organisation_id, id));
SELECT create_distributed_table('alerts_tr', 'organisation_id');
INSERT INTO alerts_tr SELECT alerts_ulid(timestamptz '2026-10-01' + g * interval '1 minute'), 'org' || g % 8,
                             jsonb_build_object('team', 't' || g % 30, 'n', g) FROM generate_series(1, 30000) g;
SQL
err=$(at "$C" -c "CALL alerts_enable('alerts_tr')" 2>&1 || true)
echo "$err" | grep -q "alerts_tr is a Citus table, where Citus creates triggers only with citus.enable_unsafe_triggers on" \
  || fail "trigger form without citus.enable_unsafe_triggers: $err"
[ "$(at "$C" -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'alerts_tr'::regclass AND attname = 'attribute_values_bitmap'")" = 0 ] \
  || fail "the refused alerts_enable left a column behind"
progress=$(at "$C" -c "SET citus.enable_unsafe_triggers = on" -c "CALL alerts_enable('alerts_tr', batch_rows => 2000, bits => 128)" 2>&1)
echo "$progress" | grep -q "alerts_tr is ready: 30000 bitmaps written" || fail "alerts_enable (trigger form): $progress"
# the narrow column (bits => 128) on every shard placement
narrow=$(at "$C" -c "SELECT count(*) FILTER (WHERE result = 'bit(128)') || ' ' || count(*) FROM run_command_on_placements('alerts_tr',
                     \$\$SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = '%s'::regclass AND attname = 'attribute_values_bitmap'\$\$)")
read -r n128 nplacements <<<"$narrow"
[ "$n128" = "$nplacements" ] && [ "$nplacements" -gt 0 ] || fail "bits => 128: $n128 of $nplacements shard placements have a bit(128) column"
at "$C" -c "INSERT INTO alerts_tr SELECT alerts_ulid(), 'org' || g % 8, jsonb_build_object('team', 'new', 'n', g) FROM generate_series(1, 1000) g" \
        -c "UPDATE alerts_tr SET attribute_values = attribute_values || '{\"updated\": true}' WHERE organisation_id = 'org3' AND attribute_values @> '{\"team\": \"t3\"}'"
stats=$(at "$C" -c "SELECT rows || ' ' || rows_without_bitmap || ' ' || stale_bitmaps FROM alerts_bloom_stats('alerts_tr')")
[ "$stats" = "31000 0 0" ] || fail "trigger form after inserts and updates: $stats (want 31000 0 0)"
# bitmaps made wrong behind the trigger's back, on the shards, then rebuilt
at "$C" -c "SELECT run_command_on_placements('alerts_tr', 'ALTER TABLE %s DISABLE TRIGGER USER')" \
        -c "SELECT run_command_on_placements('alerts_tr', \$\$UPDATE %s SET attribute_values_bitmap = NULL WHERE attribute_values @> '{\"team\": \"t7\"}'\$\$)" \
        -c "SELECT run_command_on_placements('alerts_tr', 'ALTER TABLE %s ENABLE TRIGGER USER')" >/dev/null
[ "$(at "$C" -c "SELECT rows_without_bitmap FROM alerts_bloom_stats('alerts_tr')")" = 1000 ] || fail "alerts_bloom_stats does not see the 1000 missing bitmaps"
at "$C" -c "CALL alerts_rebuild('alerts_tr', batch_rows => 5000)" >/dev/null 2>&1
stats=$(at "$C" -c "SELECT rows_without_bitmap || ' ' || stale_bitmaps FROM alerts_bloom_stats('alerts_tr')")
[ "$stats" = "0 0" ] || fail "after alerts_rebuild: $stats"
[ "$(at "$C" -c "SELECT count(*) FROM alerts_tr WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 128)")" = 0 ] \
  || fail "trigger form at bit(128): rows with a wrong bitmap after alerts_rebuild"
got=$(at "$C" -c "SELECT count(*) FROM alerts_search(NULL::alerts_tr, 'org7', '{\"team\": \"t7\"}', '-infinity', NULL, 5000)")
[ "$got" = "$(at "$C" -c "SELECT count(*) FROM alerts_tr WHERE organisation_id = 'org7' AND attribute_values @> '{\"team\": \"t7\"}'")" ] \
  || fail "trigger form: alerts_search found $got rows"
# every tenant, several filters, pages of 50 through the coordinator at bit(128)
at "$C" >/dev/null <<'SQL'
CREATE OR REPLACE FUNCTION tr_differential() RETURNS text LANGUAGE plpgsql AS $$
DECLARE o text; f jsonb; page text[]; oracle text[]; cursor_id text; n int; bad int := 0; pages int := 0;
BEGIN
    FOR o IN SELECT 'org' || g FROM generate_series(0, 7) g LOOP
        FOREACH f IN ARRAY ARRAY['{"team": "t7"}', '{"team": ["t1", "t2"]}', '{"team": "new"}', '{"n": 77}', '{"team": "nope"}', '{}']::jsonb[] LOOP
            SELECT coalesce(array_agg(id ORDER BY id DESC), '{}') INTO oracle FROM alerts_tr
            WHERE organisation_id = o AND (CASE WHEN jsonb_typeof(f->'team') = 'array'
                                                THEN (attribute_values->'team') <@ (f->'team') ELSE attribute_values @> f END);
            cursor_id := NULL; n := 0;
            LOOP
                SELECT coalesce(array_agg(s.id ORDER BY s.ordinality), '{}') INTO page
                FROM alerts_search(NULL::alerts_tr, o, f, '-infinity', cursor_id, 50) WITH ORDINALITY s;
                IF page IS DISTINCT FROM coalesce(oracle[n * 50 + 1 : n * 50 + 50], '{}') THEN bad := bad + 1; END IF;
                n := n + 1; pages := pages + 1;
                EXIT WHEN cardinality(page) < 50 OR n >= 4;
                cursor_id := page[50];
            END LOOP;
        END LOOP;
    END LOOP;
    RETURN bad || ' ' || pages;
END $$;
SQL
read -r bad pages <<<"$(at "$C" -c "SELECT tr_differential()")"
[ "$bad" = 0 ] && [ "$pages" -gt 48 ] || fail "trigger form at bit(128): $bad of $pages pages differ from the exact filter"
at "$C" -c "SET citus.enable_unsafe_triggers = on" -c "CALL alerts_disable('alerts_tr')" >/dev/null 2>&1
left=$(at "$C" -c "SELECT sum(result::int) FROM run_command_on_placements('alerts_tr',
                   \$\$SELECT count(*) FROM pg_attribute WHERE attrelid = '%s'::regclass AND attname = 'attribute_values_bitmap' AND NOT attisdropped\$\$)")
[ "$left" = 0 ] || fail "alerts_disable left the column on $left shards"
echo "  refused without citus.enable_unsafe_triggers; with it (bits => 128): 30000 bitmaps backfilled on the shards, kept on insert/update, 1000 rebuilt, $pages pages exact, disabled everywhere"

# Tables alerts_search cannot serve: a clear error naming them.
echo "citus: tables it cannot serve"
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE alerts_ref (LIKE alerts INCLUDING ALL);
SELECT create_reference_table('alerts_ref');
SQL
err=$(at "$C" -c "SELECT * FROM alerts_search(NULL::alerts_ref, 'org1', '{}')" 2>&1 || true)
echo "$err" | grep -q "alerts_ref is a reference or single-shard table; alerts_search serves Citus tables hash-distributed by organisation_id" \
  || fail "reference table: $err"
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE alerts_by_source (LIKE alerts INCLUDING DEFAULTS);
SELECT create_distributed_table('alerts_by_source', 'source_id');
SQL
err=$(at "$C" -c "SELECT * FROM alerts_search(NULL::alerts_by_source, 'org1', '{}')" 2>&1 || true)
echo "$err" | grep -q "alerts_by_source is hash-distributed by source_id" || fail "distributed by another column: $err"
echo "  reference table and a table distributed by another column: refused with the supported layout"
# A worker without the extension (installed on the coordinator alone, with
# DDL propagation off): a clear error naming the fix, not a crash.
noext=alerts_citus_noext
for port in "$C" "$W1" "$W2"; do
  PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -h /tmp -p "$port" -U postgres -d postgres -c "DROP DATABASE IF EXISTS $noext" -c "CREATE DATABASE $noext" >/dev/null
  psql -X -q -At -h /tmp -p "$port" -U postgres -d "$noext" -c "SET client_min_messages = warning" -c "CREATE EXTENSION citus" >/dev/null
done
psql -X -q -At -v ON_ERROR_STOP=1 -h /tmp -p "$C" -U postgres -d "$noext" >/dev/null <<SQL
SET client_min_messages = warning;
SELECT citus_set_coordinator_host('127.0.0.1', $C);
SELECT citus_add_node('127.0.0.1', $W1);
SELECT citus_add_node('127.0.0.1', $W2);
SET citus.enable_ddl_propagation = off;
CREATE EXTENSION alerts;
RESET citus.enable_ddl_propagation;
CREATE TABLE alerts (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
                     attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512), PRIMARY KEY (organisation_id, id));
CREATE INDEX ON alerts (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
SELECT create_distributed_table('alerts', 'organisation_id');
INSERT INTO alerts VALUES ('01KA0000000000000000000000', 'org1', '{"team": "t1"}', NULL);
SQL
err=$(psql -X -q -At -h /tmp -p "$C" -U postgres -d "$noext" -c "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}')" 2>&1 || true)
echo "$err" | grep -q "alerts_search: the Citus node holding this tenant's shard of alerts does not have the alerts extension" \
  || fail "worker without the extension: $err"
echo "$err" | grep -q "HINT:  install alerts on every node" || fail "worker without the extension: no hint: $err"
[ "$(psql -X -q -At -h /tmp -p "$C" -U postgres -d "$noext" -c "SELECT 1")" = 1 ] || fail "the coordinator did not survive"
for port in "$C" "$W1" "$W2"; do
  psql -X -q -At -h /tmp -p "$port" -U postgres -d postgres -c "DROP DATABASE $noext WITH (FORCE)" >/dev/null
done
echo "  a worker without the extension: a clear error with the fix"
at "$C" -c "SET client_min_messages = warning; DROP TABLE alerts_ref, alerts_by_source, alerts_tr"
