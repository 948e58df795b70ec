# Shared by the shell tests: connection settings for the scratch cluster of
# scripts/cluster.sh (the version of ALERTS_PG, see scripts/pg.sh), a strict
# psql, and helpers to check a database.
source scripts/pg.sh
pg_require
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
qa() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
wait_ready() {  # waits until the server accepts connections (after crash recovery)
  for _ in $(seq 1 600); do
    "$PG_BINDIR/pg_isready" -q && qa -d postgres -c "SELECT 1" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  fail "server not ready after 300 s"
}
# check_table DB TABLE: every row's bitmap equals alerts_bloom(attributes),
# the btree indexes agree with the heap (amcheck), and alerts_search pages
# equal the exact filter for a set of filters. Prints one summary line.
check_table() {
  local db=$1 t=$2
  local wrong
  wrong=$(qa -d "$db" -c "SELECT count(*) FROM $t WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)")
  [ "$wrong" = 0 ] || fail "$db.$t: $wrong rows with a wrong bitmap"
  local btrees="btree indexes agree with the heap (amcheck)"
  if [ "$(qa -d "$db" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'amcheck'")" = 1 ]; then
    q -d "$db" -c "CREATE EXTENSION IF NOT EXISTS amcheck" 2>/dev/null
    qa -d "$db" -c "SELECT bt_index_check(c.oid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = '$t'::regclass AND am.amname = 'btree'" >/dev/null \
      || fail "$db.$t: amcheck found an index that disagrees with the heap"
  else
    echo "SKIPPED one check: amcheck of $db.$t's btree indexes (PostgreSQL $PG_VERSION here has no amcheck module); bitmaps and searches are still checked"
    btrees="btree indexes not checked (no amcheck)"
  fi
  local bad
  bad=$(qa -d "$db" <<SQL
-- each filter beside the jsonb values whose containment (any of them) is the exact oracle
SELECT count(*) FROM (SELECT DISTINCT organisation_id FROM $t) o,
  (VALUES ('{}', '[{}]'), ('{"env": "e1"}', '[{"env": "e1"}]'),
          ('{"env": ["e2", "e4"], "svc": "s3"}', '[{"env": "e2", "svc": "s3"}, {"env": "e4", "svc": "s3"}]'),
          ('{"svc": "s11"}', '[{"svc": "s11"}]'), ('{"n": 5}', '[{"n": 5}]'), ('{"env": "none"}', '[{"env": "none"}]')) f(filter, oracle)
WHERE array(SELECT id FROM alerts_search(NULL::$t, o.organisation_id, f.filter::jsonb, '-infinity', NULL, 100))
   <> array(SELECT id FROM $t WHERE organisation_id = o.organisation_id
              AND EXISTS (SELECT 1 FROM jsonb_array_elements(f.oracle::jsonb) a WHERE attribute_values @> a)
            ORDER BY id DESC LIMIT 100);
SQL
)
  [ "$bad" = 0 ] || fail "$db.$t: $bad searches differ from the exact filter"
  # amcheck has no GIN check in PostgreSQL 15: count the rows carrying the
  # keys of 50 sampled rows through the tenant-keys index and through a
  # sequential scan; both must agree.
  local keys_index keys_note=""
  keys_index=$(qa -d "$db" -c "SELECT count(*) FROM pg_index WHERE indrelid = '$t'::regclass
                               AND pg_get_expr(indexprs, indrelid) LIKE '%alerts_keys(%'")
  if [ "$keys_index" != 0 ]; then
    local counts
    counts=$(qa -d "$db" <<SQL
CREATE TEMP TABLE sample_keys AS
  SELECT array_agg(DISTINCT k) AS ks FROM (SELECT alerts_keys(organisation_id, id, attribute_values) AS a FROM $t
                                           ORDER BY md5(id) LIMIT 50) s, unnest(a) k;
SET enable_seqscan = off; SET enable_indexscan = off;
SELECT count(*) FROM $t, sample_keys WHERE alerts_keys(organisation_id, id, attribute_values) && ks;
RESET enable_seqscan; RESET enable_indexscan; SET enable_bitmapscan = off; SET enable_indexscan = off;
SELECT count(*) FROM $t, sample_keys WHERE alerts_keys(organisation_id, id, attribute_values) && ks;
SQL
)
    local via_index via_heap
    via_index=$(echo "$counts" | sed -n 1p); via_heap=$(echo "$counts" | sed -n 2p)
    [ -n "$via_index" ] && [ "$via_index" = "$via_heap" ] \
      || fail "$db.$t: the tenant-keys index finds $via_index rows, a sequential scan $via_heap"
    keys_note=" (tenant-keys index: $via_index rows through it and through a sequential scan)"
  fi
  echo "  $db.$t: $(qa -d "$db" -c "SELECT count(*) FROM $t") rows, bitmaps correct, $btrees$keys_note, searches exact"
}
