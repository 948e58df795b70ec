-- Partitioned tables, through the calls users make: three layouts holding
-- the rows of query.sql's table (monthly by created_at, monthly by id, and
-- quarters by created_at split by tenant hash), enabled with CALL
-- alerts_enable (trigger and generated forms), indexed with
-- alerts_index_command, searched exactly (the 200 filters, page by page, with
-- cursors crossing partitions; walk, GIN and tenant-keys paths); which
-- partitions a search reads; partitions created and attached later (the
-- changes under searches, bad layouts and disabling: partitioned_changes).
SET client_min_messages = warning;
-- Postgres' own plans for the oracles' plain SQL (the custom scan is
-- tested against them in plain.sql).
SET alerts.custom_scan = off;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never

CREATE TABLE p_time (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                     priority_id int NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id, created_at))
    PARTITION BY RANGE (created_at);
SELECT format('CREATE TABLE p_time_%s PARTITION OF p_time FOR VALUES FROM (%L) TO (%L)', to_char(m, 'YYYY_MM'), m, m + interval '1 month')
FROM generate_series(timestamptz '2025-01-01', '2025-12-01', '1 month') m \gexec
CREATE TABLE p_id (LIKE p_time INCLUDING DEFAULTS, PRIMARY KEY (id)) PARTITION BY RANGE (id);
SELECT format('CREATE TABLE p_id_%s PARTITION OF p_id FOR VALUES FROM (%s) TO (%s)', to_char(m, 'YYYY_MM'),
              CASE WHEN m = '2025-01-01' THEN 'MINVALUE' ELSE quote_literal(alerts_ulid_floor(m)) END,
              CASE WHEN m = '2025-12-01' THEN 'MAXVALUE' ELSE quote_literal(alerts_ulid_floor(m + interval '1 month')) END)
FROM generate_series(timestamptz '2025-01-01', '2025-12-01', '1 month') m \gexec
CREATE TABLE p_two (LIKE p_time INCLUDING DEFAULTS, PRIMARY KEY (id, created_at, organisation_id)) PARTITION BY RANGE (created_at);
SELECT format('CREATE TABLE p_two_%s PARTITION OF p_two FOR VALUES FROM (%L) TO (%L) PARTITION BY HASH (organisation_id)',
              to_char(q, 'YYYY_"q"Q'), q, q + interval '3 months')
FROM generate_series(timestamptz '2025-01-01', '2025-10-01', '3 months') q \gexec
SELECT format('CREATE TABLE p_two_%s_h%s PARTITION OF p_two_%s FOR VALUES WITH (MODULUS 2, REMAINDER %s)', to_char(q, 'YYYY_"q"Q'), h, to_char(q, 'YYYY_"q"Q'), h)
FROM generate_series(timestamptz '2025-01-01', '2025-10-01', '3 months') q, generate_series(0, 1) h \gexec
-- No autovacuum on the leaves: the index reads counted below would count
-- its reads too (a vacuum reads every index of the leaves it visits).
DO $$ DECLARE leaf regclass; BEGIN
  FOR leaf IN SELECT relid FROM unnest(ARRAY['p_time', 'p_id', 'p_two']::regclass[]) t, pg_partition_tree(t) WHERE isleaf LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', leaf);
  END LOOP;
END $$;
INSERT INTO p_time SELECT id, organisation_id, created_at, priority_id, attribute_values FROM alerts;
INSERT INTO p_id SELECT * FROM p_time;
INSERT INTO p_two SELECT * FROM p_time;

-- Enabled through the parent: the column and trigger (or the generated
-- column) reach every partition, the backfill walks every leaf in small
-- committed batches, and the final check reads the whole table.
CALL alerts_enable('p_time');
CALL alerts_enable('p_id', batch_rows => 3000);
CALL alerts_enable('p_two', form => 'generated');
SELECT p AS layout,
       (SELECT count(*) FROM pg_partition_tree(p) WHERE isleaf) AS leaves,
       (SELECT count(*) FROM pg_partition_tree(p) t JOIN pg_trigger g ON g.tgrelid = t.relid
        WHERE t.isleaf AND g.tgname = 'alerts_bloom' AND g.tgenabled = 'A') AS leaves_with_trigger,
       (SELECT count(*) FROM pg_partition_tree(p) t JOIN pg_attribute a ON a.attrelid = t.relid
        WHERE t.isleaf AND a.attname = 'attribute_values_bitmap' AND a.attgenerated = 's') AS leaves_generated,
       s.rows, s.rows_without_bitmap, s.stale_bitmaps
FROM unnest(ARRAY['p_time', 'p_id', 'p_two']::regclass[]) p, alerts_bloom_stats(p) s;
-- Resumable: bitmaps lost on some rows (written while the trigger was off)
-- are found again by a second CALL, and alerts_rebuild rewrites wrong ones.
ALTER TABLE p_time_2025_03 DISABLE TRIGGER alerts_bloom;
\set VERBOSITY terse
CALL alerts_enable('p_time');
\set VERBOSITY default
UPDATE p_time SET attribute_values_bitmap = NULL WHERE created_at >= '2025-03-01' AND created_at < '2025-03-03';
ALTER TABLE p_time_2025_03 ENABLE TRIGGER alerts_bloom;
UPDATE p_id SET attribute_values_bitmap = alerts_bloom('{"wrong": 1}') WHERE id IN (SELECT id FROM p_id ORDER BY id LIMIT 7);
SELECT rows_without_bitmap, stale_bitmaps FROM alerts_bloom_stats('p_time');
CALL alerts_enable('p_time');
CALL alerts_rebuild('p_id', batch_rows => 50000);
SELECT p AS layout, s.rows_without_bitmap, s.stale_bitmaps
FROM unnest(ARRAY['p_time', 'p_id']::regclass[]) p, alerts_bloom_stats(p) s;

-- Searching before the pagination index exists is refused, as on a plain
-- table; alerts_index_command gives the statements that build it on every
-- partition without blocking writes.
\set VERBOSITY terse
SELECT * FROM alerts_search(NULL::p_id, 'ORG_A', '{}');
\set VERBOSITY default
SELECT alerts_index_command('p_two');
SELECT alerts_index_command('p_time') \gexec
SELECT alerts_index_command('p_id') \gexec
SELECT alerts_index_command('p_two') \gexec
SELECT alerts_index_command('p_two') \gexec
SELECT c.relname AS partitioned_index, i.indisvalid AS valid,
       (SELECT count(*) FROM pg_partition_tree(c.oid) t WHERE t.isleaf) AS leaf_indexes
FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relname IN ('p_time_alerts_page_idx', 'p_id_alerts_page_idx', 'p_two_alerts_page_idx') ORDER BY 1;
-- Partitions added later get their index from Postgres, named its own
-- way: one created as a partition, one attached with an equal index of its
-- own, one partitioned itself. The command run again builds nothing twice
-- and attaches nothing twice (before, it built a second index on each and
-- failed to attach it).
CREATE TABLE p_time_2026_01 PARTITION OF p_time FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CREATE TABLE p_time_2026_02 (LIKE p_time INCLUDING DEFAULTS);
CREATE INDEX feb_page ON p_time_2026_02 (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
ALTER TABLE p_time ATTACH PARTITION p_time_2026_02 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
CREATE TABLE p_time_2026_q2 PARTITION OF p_time FOR VALUES FROM ('2026-04-01') TO ('2026-07-01') PARTITION BY RANGE (created_at);
CREATE TABLE p_time_2026_04 PARTITION OF p_time_2026_q2 FOR VALUES FROM ('2026-04-01') TO ('2026-05-01');
SELECT alerts_index_command('p_time');
SELECT alerts_index_command('p_time') \gexec
SELECT t.relid::regclass AS partition, count(x.indexrelid) AS page_indexes,
       count(*) FILTER (WHERE i.relname LIKE '%alerts_page_idx') AS named_ours
FROM pg_partition_tree('p_time') t
LEFT JOIN pg_index x ON x.indrelid = t.relid AND x.indexrelid IN (SELECT relid FROM pg_partition_tree('p_time_alerts_page_idx'))
LEFT JOIN pg_class i ON i.oid = x.indexrelid
WHERE t.relid::regclass::text LIKE 'p_time_2026%' OR t.level = 0
GROUP BY t.relid ORDER BY 1::text;
SELECT count(*) AS indexes_beside_the_tree
FROM pg_index x WHERE x.indrelid IN (SELECT relid FROM pg_partition_tree('p_time'))
  AND x.indexrelid NOT IN (SELECT relid FROM pg_partition_tree('p_time_alerts_page_idx'))
  AND x.indexrelid NOT IN (SELECT relid FROM pg_partition_tree('p_time_pkey'));
DROP TABLE p_time_2026_01, p_time_2026_02, p_time_2026_q2;
VACUUM ANALYZE p_time, p_id, p_two;

-- The differential test of search.sql on each layout: every page of the
-- first max_pages of each of the 200 filters equals the oracle's slice;
-- crossing counts the pages whose rows come from two months or more.
CREATE FUNCTION part_differential(tbl regclass, run text, max_pages int, cols jsonb DEFAULT NULL, cols_sql text DEFAULT 'true')
RETURNS TABLE (layout regclass, label text, filters bigint, pages bigint, mismatched_pages bigint, crossing_pages bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    oracle text[];
    page text[];
    crossed boolean;
    cursor_id text;
    n int;
    total_pages bigint := 0;
    total_bad bigint := 0;
    total_crossing bigint := 0;
    size int;
    state text := table_state(tbl);
BEGIN
    FOR r IN SELECT * FROM filters ORDER BY n LOOP
        size := (ARRAY[50, 1, 7, 500])[1 + r.n % 4];
        oracle := oracle_ids(tbl, state, r.f, r.since, cols_sql);
        cursor_id := NULL;
        n := 0;
        LOOP
            EXECUTE format('SELECT coalesce(array_agg(s.id ORDER BY s.ordinality), ''{}''),
                                   count(DISTINCT date_trunc(''month'', s.created_at)) > 1
                            FROM alerts_search(NULL::%s, ''ORG_A'', $1, $2, $3, $4, $5) WITH ORDINALITY s', tbl)
                INTO page, crossed USING r.f, r.since, cursor_id, size, cols;
            IF page IS DISTINCT FROM coalesce(oracle[n * size + 1 : n * size + size], '{}') THEN
                total_bad := total_bad + 1;
            END IF;
            total_crossing := total_crossing + crossed::int;
            n := n + 1;
            EXIT WHEN cardinality(page) < size OR n >= max_pages;
            cursor_id := page[size];
        END LOOP;
        total_pages := total_pages + n;
    END LOOP;
    RETURN QUERY SELECT tbl, run, count(*), total_pages, total_bad, total_crossing FROM filters;
END $$;
SELECT * FROM part_differential('p_time', 'walk', 8);
SELECT * FROM part_differential('p_id', 'walk', 8);
SELECT * FROM part_differential('p_two', 'walk', 8);
-- Partitioned GIN and tenant-keys indexes: rare filters leave the walk.
CREATE INDEX p_time_gin ON p_time USING gin (attribute_values jsonb_path_ops);
CREATE INDEX p_two_gin ON p_two USING gin (attribute_values jsonb_path_ops);
CREATE INDEX p_id_keys ON p_id USING gin (alerts_keys(organisation_id, id, attribute_values));
ANALYZE p_time, p_id, p_two;
SELECT * FROM part_differential('p_time', 'walk, then GIN', 8);
SELECT * FROM part_differential('p_two', 'walk, then GIN', 8);
SELECT * FROM part_differential('p_id', 'walk, then tenant keys', 8);
-- Column filters through a partitioned table's statements.
SELECT * FROM part_differential('p_two', 'walk, then GIN, priority 2 or 3', 4, '{"priority_id": [2, 3]}', 'priority_id IN (2, 3)');
SELECT * FROM part_differential('p_id', 'walk, then tenant keys, priority 1', 4, '{"priority_id": 1}', 'priority_id = 1');
CREATE INDEX p_time_keys ON p_time USING gin (alerts_keys(organisation_id, id, attribute_values));
SET alerts.search_shortcuts = off;
SELECT * FROM part_differential('p_time', 'walk, then tenant keys, no shortcuts', 8);
RESET alerts.search_shortcuts;
-- The direct walk merges leaves whose ids overlap. p_mixed is partitioned
-- by created_at, but its rows' created_at are scattered over the year
-- (nothing ties them to the ids), a default partition holds the rest, and
-- one leaf was made apart with its columns in another order and a dropped
-- one (its rows are converted to the parent's type); every page is the
-- oracle's, walked directly and through the statements alike.
CREATE TABLE p_mixed (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                      priority_id int NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}')
    PARTITION BY RANGE (created_at);
CREATE TABLE p_mixed_a PARTITION OF p_mixed FOR VALUES FROM ('2025-01-01') TO ('2025-05-01');
CREATE TABLE p_mixed_b (dropped int, attribute_values jsonb NOT NULL DEFAULT '{}', priority_id int NOT NULL,
                        created_at timestamptz NOT NULL, id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL);
ALTER TABLE p_mixed_b DROP COLUMN dropped;
ALTER TABLE p_mixed ATTACH PARTITION p_mixed_b FOR VALUES FROM ('2025-05-01') TO ('2025-09-01');
CREATE TABLE p_mixed_rest PARTITION OF p_mixed DEFAULT;
INSERT INTO p_mixed SELECT id, organisation_id, timestamptz '2025-01-01' + (extract(epoch FROM created_at)::bigint % 1024) * interval '9 hours', priority_id, attribute_values FROM p_time;
CALL alerts_enable('p_mixed');
SELECT alerts_index_command('p_mixed') \gexec
ANALYZE p_mixed;
SELECT p.relid::regclass AS leaf, count(a.*) > 20000 AS holds_rows, min(a.id) < (SELECT max(id) FROM p_mixed WHERE tableoid <> p.relid) AS ids_overlap
FROM pg_partition_tree('p_mixed') p JOIN p_mixed a ON a.tableoid = p.relid WHERE p.isleaf GROUP BY p.relid ORDER BY 1::text;
SELECT * FROM part_differential('p_mixed', 'merged walk', 8);
CREATE INDEX p_mixed_keys ON p_mixed USING gin (alerts_keys(organisation_id, id, attribute_values));
ANALYZE p_mixed;
SELECT * FROM part_differential('p_mixed', 'merged walk, then tenant keys, priority 1', 4, '{"priority_id": 1}', 'priority_id = 1');
SET alerts.search_direct_scan = off;
SELECT * FROM part_differential('p_mixed', 'statement walk, then tenant keys', 8);
RESET alerts.search_direct_scan;
-- The direct walk runs no statement: the statement walk's per-entry test
-- (alerts_search_probe) is called only with the direct walk off.
SET track_functions = 'all';
SET stats_fetch_consistency = none;
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE probe_calls AS SELECT coalesce(sum(calls), 0) AS calls FROM pg_stat_user_functions WHERE funcname = 'alerts_search_probe';
SELECT count(*) AS direct_rows FROM alerts_search(NULL::p_mixed, 'ORG_A', '{"env": "prod"}', '-infinity', page_size => 20);
SELECT pg_stat_force_next_flush();
SELECT coalesce(sum(calls), 0) - (SELECT calls FROM probe_calls) AS probes_direct FROM pg_stat_user_functions WHERE funcname = 'alerts_search_probe';
SET alerts.search_direct_scan = off;
SELECT count(*) AS statement_rows FROM alerts_search(NULL::p_mixed, 'ORG_A', '{"env": "prod"}', '-infinity', page_size => 20);
RESET alerts.search_direct_scan;
SELECT pg_stat_force_next_flush();
SELECT coalesce(sum(calls), 0) - (SELECT calls FROM probe_calls) > 0 AS probes_statements FROM pg_stat_user_functions WHERE funcname = 'alerts_search_probe';
RESET track_functions;
RESET stats_fetch_consistency;
-- A role granted the partitioned table alone may not read its leaves as
-- they are, nor may one whose leaf has a row-level policy of its own
-- (which a query of the partitioned table does not apply): both read
-- through the partitioned table's statements, exactly.
CREATE ROLE part_reader;
GRANT SELECT ON p_mixed, filters TO part_reader;
SET ROLE part_reader;
SELECT * FROM part_differential('p_mixed', 'parent granted alone', 2);
RESET ROLE;
GRANT SELECT ON p_mixed_a, p_mixed_b, p_mixed_rest TO part_reader;
ALTER TABLE p_mixed_b ENABLE ROW LEVEL SECURITY;
SET ROLE part_reader;
SELECT * FROM part_differential('p_mixed', 'a leaf under its own policy', 2);
RESET ROLE;
ALTER TABLE p_mixed_b DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON p_mixed, p_mixed_a, p_mixed_b, p_mixed_rest, filters FROM part_reader;
DROP ROLE part_reader;
-- A leaf searched on its own, then as a partition, then on its own: its
-- statements return rows of the table asked for each time.
SELECT count(*) AS own FROM alerts_search(NULL::p_mixed_b, 'ORG_A', '{}', '-infinity', page_size => 5);
SELECT count(*) AS parent FROM alerts_search(NULL::p_mixed, 'ORG_A', '{"env": "prod"}', '-infinity', page_size => 5);
SELECT count(*) AS own_again FROM alerts_search(NULL::p_mixed_b, 'ORG_A', '{"env": "prod"}', '-infinity', page_size => 5);
DROP TABLE p_mixed;

-- A narrower bitmap through the parent: bits => 128 reaches every leaf's
-- column, trigger and backfill; the INCLUDE index holds the folded bitmaps,
-- and the walk and the tenant-keys path stay exact on them.
CREATE TABLE p_slim (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                     priority_id int NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id))
    PARTITION BY RANGE (id);
SELECT format('CREATE TABLE p_slim_%s PARTITION OF p_slim FOR VALUES FROM (%s) TO (%s)', q,
              CASE WHEN q = 0 THEN 'MINVALUE' ELSE quote_literal(alerts_ulid_floor(timestamptz '2025-01-01' + q * interval '3 months')) END,
              CASE WHEN q = 3 THEN 'MAXVALUE' ELSE quote_literal(alerts_ulid_floor(timestamptz '2025-01-01' + (q + 1) * interval '3 months')) END)
FROM generate_series(0, 3) q \gexec
INSERT INTO p_slim (id, organisation_id, created_at, priority_id, attribute_values)
SELECT id, organisation_id, created_at, priority_id, attribute_values FROM p_id WHERE id < (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM p_id);
CALL alerts_enable('p_slim', bits => 128, batch_rows => 2000);
INSERT INTO p_slim (id, organisation_id, created_at, priority_id, attribute_values)
SELECT id, organisation_id, created_at, priority_id, attribute_values FROM p_id WHERE id >= (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM p_id);
SELECT alerts_index_command('p_slim') \gexec
CREATE INDEX p_slim_keys ON p_slim USING gin (alerts_keys(organisation_id, id, attribute_values));
VACUUM ANALYZE p_slim;
SELECT count(*) AS leaves, count(*) FILTER (WHERE format_type(a.atttypid, a.atttypmod) = 'bit(128)') AS leaves_bit128,
       count(*) FILTER (WHERE g.tgenabled = 'A') AS leaves_with_trigger
FROM pg_partition_tree('p_slim') t
JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = 'attribute_values_bitmap'
LEFT JOIN pg_trigger g ON g.tgrelid = t.relid AND g.tgname = 'alerts_bloom'
WHERE t.isleaf;
SELECT count(*) AS rows, count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 128)) AS wrong_bitmaps FROM p_slim;
SELECT rows, rows_without_bitmap, stale_bitmaps FROM alerts_bloom_stats('p_slim');
SELECT * FROM part_differential('p_slim', 'bit(128): walk, then tenant keys', 8);
SET alerts.search_shortcuts = off;
SELECT * FROM part_differential('p_slim', 'bit(128): walk, then tenant keys, no shortcuts, priority 1', 4, '{"priority_id": 1}', 'priority_id = 1');
RESET alerts.search_shortcuts;
DROP TABLE p_slim;

-- Which partitions a search reads: the partitions whose indexes were read
-- by a first page of the last four weeks. By id, Postgres prunes the
-- partitions outside the window (the window is an id range); by created_at
-- it cannot (nothing ties created_at to the id), so every partition's index
-- is read, one descent each; by created_at then by a hash of the tenant,
-- only the tenant's hash partition of each (every statement, the exact
-- check's row lookups included, names the tenant).
SET stats_fetch_consistency = none;
CREATE TABLE index_reads (layout regclass, indexrelid oid, blocks bigint);
SELECT pg_stat_force_next_flush();
INSERT INTO index_reads
SELECT t.layout, s.indexrelid, s.idx_blks_hit + s.idx_blks_read
FROM unnest(ARRAY['p_time', 'p_id', 'p_two']::regclass[]) t(layout), pg_partition_tree(t.layout) p
JOIN pg_statio_all_indexes s ON s.relid = p.relid WHERE p.isleaf;
SELECT (SELECT count(*) FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "prod"}', '2025-12-04')) AS p_time_rows,
       (SELECT count(*) FROM alerts_search(NULL::p_id, 'ORG_A', '{"env": "prod"}', '2025-12-04')) AS p_id_rows,
       (SELECT count(*) FROM alerts_search(NULL::p_two, 'ORG_A', '{"env": "prod"}', '2025-12-04')) AS p_two_rows;
SELECT pg_stat_force_next_flush();
SELECT r.layout, (SELECT count(*) FROM pg_partition_tree(r.layout) WHERE isleaf) AS leaves,
       count(DISTINCT s.relid) FILTER (WHERE s.idx_blks_hit + s.idx_blks_read > r.blocks) AS leaves_read
FROM index_reads r JOIN pg_statio_all_indexes s USING (indexrelid) GROUP BY r.layout ORDER BY r.layout::text;
RESET stats_fetch_consistency;

-- By created_at, a validated CHECK on each partition's ids says what the
-- descent along its primary key would: the partitions it keeps out of the
-- window are locked but their indexes not read (the constants folded as
-- the planner folds them). The same search, the same page.
SET stats_fetch_consistency = none;
SELECT format('ALTER TABLE %I ADD CONSTRAINT ids_in_month CHECK (id >= alerts_ulid_floor(%L) AND id < alerts_ulid_floor(%L))',
              'p_time_' || to_char(m, 'YYYY_MM'), m, m + interval '1 month')
FROM generate_series(timestamptz '2025-01-01', '2025-12-01', '1 month') m \gexec
SELECT array(SELECT id FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "prod"}', '2025-12-04'))
     = array(SELECT id FROM p_time WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
             AND id >= alerts_ulid_floor('2025-12-04') ORDER BY id DESC LIMIT 50) AS checked_page_exact;
-- Only the search is counted: the planner of the plain SQL above reads
-- each leaf index's metapage again whenever its relcache entry is rebuilt
-- (a reset of the caches, as a busy server sends, rebuilds them all).
DELETE FROM index_reads;
SELECT pg_stat_force_next_flush();
INSERT INTO index_reads
SELECT 'p_time', s.indexrelid, s.idx_blks_hit + s.idx_blks_read
FROM pg_partition_tree('p_time') p JOIN pg_statio_all_indexes s ON s.relid = p.relid WHERE p.isleaf;
SELECT count(*) AS checked_rows FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "prod"}', '2025-12-04');
SELECT pg_stat_force_next_flush();
SELECT count(DISTINCT s.relid) FILTER (WHERE s.idx_blks_hit + s.idx_blks_read > r.blocks) AS checked_leaves_read
FROM index_reads r JOIN pg_statio_all_indexes s USING (indexrelid);
-- EXPLAIN ANALYZE of plain SQL counts the partitions its CHECKs kept closed.
CREATE FUNCTION explain_json(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
  RETURN plan;
END $$;
SET alerts.custom_scan = on;
SELECT jsonb_path_query_first(explain_json($q$SELECT id FROM p_time WHERE organisation_id = 'ORG_A'
    AND attribute_values @> '{"env": "prod"}' AND id >= alerts_ulid_floor('2025-12-04') ORDER BY id DESC LIMIT 50$q$),
    '$.**."Partitions Skipped By CHECK"') AS skipped_by_check;
SET alerts.custom_scan = off;
DROP FUNCTION explain_json(text);
-- A NOT VALID constraint is not trusted: rows from before it may break it
-- (here a November row with a December id), and the search finds them.
ALTER TABLE p_time_2025_11 DROP CONSTRAINT ids_in_month;
INSERT INTO p_time (id, organisation_id, created_at, priority_id, attribute_values)
VALUES (alerts_ulid('2025-12-20'), 'ORG_A', '2025-11-20', 1, '{"env": "late"}');
ALTER TABLE p_time_2025_11 ADD CONSTRAINT ids_in_month
    CHECK (id >= alerts_ulid_floor('2025-11-01') AND id < alerts_ulid_floor('2025-12-01')) NOT VALID;
SELECT count(*) AS not_valid_row_found FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "late"}', '2025-12-04');
SET alerts.custom_scan = on;
SELECT count(*) AS not_valid_row_found_plain FROM (SELECT id FROM p_time WHERE organisation_id = 'ORG_A'
    AND attribute_values @> '{"env": "late"}' AND id >= alerts_ulid_floor('2025-12-04') ORDER BY id DESC LIMIT 50) s;
SET alerts.custom_scan = off;
-- Once validated (the row moved to its month first), it is.
\set VERBOSITY terse
ALTER TABLE p_time_2025_11 VALIDATE CONSTRAINT ids_in_month;
\set VERBOSITY default
UPDATE p_time SET created_at = '2025-12-20' WHERE attribute_values @> '{"env": "late"}';
ALTER TABLE p_time_2025_11 VALIDATE CONSTRAINT ids_in_month;
SELECT count(*) AS moved_row_found FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "late"}', '2025-12-04');
DELETE FROM p_time WHERE attribute_values @> '{"env": "late"}';
SELECT format('ALTER TABLE %I DROP CONSTRAINT ids_in_month', 'p_time_' || to_char(m, 'YYYY_MM'))
FROM generate_series(timestamptz '2025-01-01', '2025-12-01', '1 month') m \gexec
RESET stats_fetch_consistency;

-- Partitions created later get the column, the trigger and the index from
-- the parent. A populated table attached later needs the bitmap column
-- first (Postgres refuses a partition that lacks one of the parent's
-- columns); its rows have no bitmap until one CALL on the partition fills
-- them. A table enabled on its own cannot be attached: its trigger has the
-- name of the parent's.
CREATE TABLE p_time_2026_01 PARTITION OF p_time FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
INSERT INTO p_time (id, organisation_id, created_at, priority_id, attribute_values)
VALUES (alerts_ulid('2026-01-02'), 'ORG_A', '2026-01-02', 1, '{"env": "new"}');
SELECT attribute_values_bitmap = alerts_bloom(attribute_values) AS new_partition_bitmap,
       (SELECT count(*) FROM pg_indexes WHERE tablename = 'p_time_2026_01' AND indexdef LIKE '%INCLUDE (attribute_values_bitmap)') AS new_partition_index
FROM p_time_2026_01;
CREATE TABLE archive (LIKE alerts INCLUDING DEFAULTS);
ALTER TABLE archive DROP COLUMN attribute_values_bitmap;
INSERT INTO archive (id, organisation_id, created_at, priority_id, attribute_values)
SELECT alerts_ulid(t), 'ORG_A', t, 1, jsonb_build_object('env', 'archived', 'n', g)
FROM generate_series(1, 500) g, LATERAL (SELECT timestamptz '2024-12-01' + g * interval '1 hour' AS t) x;
\set VERBOSITY terse
ALTER TABLE p_time ATTACH PARTITION archive FOR VALUES FROM ('2024-12-01') TO ('2025-01-01');
\set VERBOSITY default
ALTER TABLE archive ADD COLUMN attribute_values_bitmap bit(512);
ALTER TABLE p_time ATTACH PARTITION archive FOR VALUES FROM ('2024-12-01') TO ('2025-01-01');
SELECT rows_without_bitmap, substring(advice from '\d+ rows have no bitmap: backfill them with CALL [^(]+') AS advice FROM alerts_bloom_stats('p_time');
CALL alerts_enable('archive');
SELECT rows_without_bitmap, stale_bitmaps FROM alerts_bloom_stats('p_time');
SELECT array(SELECT id FROM alerts_search(NULL::p_time, 'ORG_A', '{"env": "archived"}', '-infinity', NULL, 100))
     = array(SELECT id FROM archive ORDER BY id DESC LIMIT 100) AS archive_searchable;
CREATE TABLE enabled_alone (LIKE archive);
CALL alerts_enable('enabled_alone');
\set VERBOSITY terse
ALTER TABLE p_time ATTACH PARTITION enabled_alone FOR VALUES FROM ('2024-11-01') TO ('2024-12-01');
\set VERBOSITY default
DROP TABLE enabled_alone;
