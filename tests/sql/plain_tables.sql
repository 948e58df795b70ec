-- Plain SQL through the custom scan, continued (after plain.sql, whose
-- differential functions and tables it uses): tables of other shapes:
-- ids that repeat or are not ULIDs, an id column that may be NULL,
-- partitioned tables, plans cached before alerts_disable, collations,
-- a bit(128) bitmap column; then what plain.sql set up is dropped.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never

-- Ids that repeat (no unique index on them) and ids that are not ULIDs
-- (below the ULID range, and above it): pages end among rows sharing an id.
CREATE TABLE odd (LIKE alerts INCLUDING DEFAULTS);
INSERT INTO odd SELECT * FROM alerts WHERE organisation_id = 'ORG_C';
INSERT INTO odd SELECT * FROM odd WHERE id < '01K' AND id > '01JZ';
INSERT INTO odd SELECT * FROM odd WHERE id < '01JV' AND id > '01JT';
INSERT INTO odd (id, organisation_id, created_at, priority_id, attribute_values)
SELECT v, 'ORG_C', now(), 1, '{"team": "T0", "env": "prod"}' FROM unnest(ARRAY['', '', '-1', '0', '00', '0000000000000000000000000', 'abc', 'zzz', '~', '9']) v;
CALL alerts_enable('odd');
SELECT alerts_index_command('odd') \gexec
ANALYZE odd;
CREATE FUNCTION odd_pages(f jsonb, lim int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    q text := 'SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT $4';
BEGIN
    RETURN plain_same(q, 'ORG_C', f, '8', lim) || '; ascending: '
        || plain_same(replace(q, 'DESC', 'ASC'), 'ORG_C', f, '8', lim);
END $$;
SELECT f, lim, odd_pages(f::jsonb, lim)
FROM unnest(ARRAY['{"env": "prod"}', '{"team": "T0"}', '{"team": "T0", "env": "prod"}', '{}']) f, unnest(ARRAY[3, 50, 100000]) lim
ORDER BY f, lim;
-- The statement that reads the rows of a page's last id is kept for the
-- session and names the table: another table taking the name gets its own.
CREATE FUNCTION odd_ties() RETURNS text LANGUAGE sql AS $$
    SELECT plain_same('SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', 'ORG_C', '{"env": "prod"}', '01K', 7) $$;
SELECT odd_ties() AS before_the_swap;
ALTER TABLE odd RENAME TO odd_before;
CREATE TABLE odd (LIKE odd_before INCLUDING ALL);
INSERT INTO odd SELECT * FROM odd_before WHERE priority_id <> 1;
ANALYZE odd;
SELECT (SELECT count(*) FROM odd) < (SELECT count(*) FROM odd_before) AS fewer_rows,
       odd_ties() AS after_the_swap;
DROP TABLE odd;
ALTER TABLE odd_before RENAME TO odd;
SELECT odd_ties() AS back_again;
DROP FUNCTION odd_ties();
SELECT plain_same('SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC', 'ORG_C', '{"env": "prod"}', '01JV');
SELECT plain_same('SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 ORDER BY id ASC', 'ORG_C', '{"env": "prod"}', '01JV');
-- the tenant keys oldest first among ids that repeat or are not ULIDs
CREATE INDEX odd_keys ON odd USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT plain_same('SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 40', 'ORG_C', '{"team": "T0", "env": "prod"}');
SELECT plain_same('SELECT id FROM odd WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 ORDER BY id ASC LIMIT 40', 'ORG_C', '{"rare": "needle"}', '0');

-- An id column that may be NULL: a row without an id matches and sorts
-- first (DESC) or last (ASC); the node is offered only with a bound on id,
-- which such a row fails.
CREATE TABLE nid (LIKE alerts INCLUDING DEFAULTS);
ALTER TABLE nid ALTER COLUMN id DROP NOT NULL;
INSERT INTO nid SELECT * FROM alerts WHERE organisation_id = 'ORG_C' ORDER BY id LIMIT 500;
INSERT INTO nid (id, organisation_id, created_at, priority_id, attribute_values) VALUES (NULL, 'ORG_C', now(), 1, '{"team": "T1"}');
CALL alerts_enable('nid');
SELECT alerts_index_command('nid') \gexec
ANALYZE nid;
SELECT shape, plain_same(q, 'ORG_C', '{"team": "T1"}', '01K') AS result FROM (VALUES
    ('newest first', 'SELECT coalesce(id, ''NULL'') FROM nid WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 5'),
    ('oldest first', 'SELECT coalesce(id, ''NULL'') FROM nid WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id LIMIT 500'),
    ('below a bound', 'SELECT coalesce(id, ''NULL'') FROM nid WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT 5')
) s(shape, q);
DROP TABLE nid;

-- What the planner reads of a table in the catalogs is kept per relcache
-- epoch: DDL in the same session is seen by the next plan. Here id loses
-- NOT NULL and a row without an id comes in: the node, which never returns
-- it, is no longer offered without a bound on id.
CREATE TABLE nn (LIKE alerts INCLUDING DEFAULTS);
INSERT INTO nn SELECT * FROM alerts WHERE organisation_id = 'ORG_C' ORDER BY id LIMIT 500;
CALL alerts_enable('nn');
SELECT alerts_index_command('nn') \gexec
ANALYZE nn;
\set nn_q 'SELECT coalesce(id, ''NULL'') FROM nn WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 5'
SELECT plain_same(:'nn_q', 'ORG_C', '{"team": "T1"}') AS before_alter;
ALTER TABLE nn ALTER COLUMN id DROP NOT NULL;
INSERT INTO nn (id, organisation_id, created_at, priority_id, attribute_values) VALUES (NULL, 'ORG_C', now(), 1, '{"team": "T1"}');
SELECT plain_same(:'nn_q', 'ORG_C', '{"team": "T1"}') AS after_alter;
SELECT (SELECT coalesce(id, 'NULL') FROM nn WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}'
        ORDER BY id DESC LIMIT 1) AS newest;
DROP TABLE nn;

-- Partitioned tables: one node searches the table whole (by created_at
-- the search merges the partitions, by id it walks them in turn, newest
-- range first); with alerts.custom_scan_partitioned off, the node on each
-- partition, under Postgres' Merge Append (by created_at) or ordered
-- Append (by id).
CREATE TABLE pp (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE TABLE pp_2025a PARTITION OF pp FOR VALUES FROM ('2024-01-01') TO ('2025-07-01');
CREATE TABLE pp_2025b PARTITION OF pp FOR VALUES FROM ('2025-07-01') TO ('2027-01-01');
-- no autovacuum: the plans and routes below are asserted leaf by leaf
ALTER TABLE pp_2025a SET (autovacuum_enabled = off);
ALTER TABLE pp_2025b SET (autovacuum_enabled = off);
INSERT INTO pp SELECT * FROM alerts WHERE organisation_id IN ('ORG_B', 'ORG_C');
CREATE TABLE pq (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE pq_a PARTITION OF pq FOR VALUES FROM (MINVALUE) TO ('01JY');
CREATE TABLE pq_b PARTITION OF pq FOR VALUES FROM ('01JY') TO (MAXVALUE);
INSERT INTO pq SELECT * FROM alerts WHERE organisation_id IN ('ORG_B', 'ORG_C');
CALL alerts_enable('pp');
CALL alerts_enable('pq');
SELECT alerts_index_command('pp') \gexec
SELECT alerts_index_command('pq') \gexec
ANALYZE pp, pq;
EXPLAIN (COSTS OFF)
SELECT id FROM pp WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
SET alerts.custom_scan_partitioned = off;
EXPLAIN (COSTS OFF)
SELECT id FROM pp WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
RESET alerts.custom_scan_partitioned;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
SELECT t, f, plain_same(format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', t), 'ORG_B', f::jsonb, '01K0', 120)
FROM unnest(ARRAY['pp', 'pq']) t, unnest(ARRAY['{"team": "T1"}', '{"env": "prod", "sev": 3}', '{"rare": "needle"}']) f
ORDER BY t, f;
SET alerts.custom_scan_partitioned = off;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
SELECT t, f, plain_same(format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', t), 'ORG_B', f::jsonb, '01K0', 120) AS per_partition
FROM unnest(ARRAY['pp', 'pq']) t, unnest(ARRAY['{"team": "T1"}', '{"env": "prod", "sev": 3}', '{"rare": "needle"}']) f
ORDER BY t, f;
RESET alerts.custom_scan_partitioned;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id LIMIT 50;
SELECT t, f, plain_same(format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 ORDER BY id ASC LIMIT $4', t), 'ORG_B', f::jsonb, '01JX', 120)
FROM unnest(ARRAY['pp', 'pq']) t, unnest(ARRAY['{"team": "T1"}', '{"env": "prod", "sev": 3}', '{"rare": "needle"}']) f
ORDER BY t, f;

-- Planned as one relation (alerts.custom_scan_one_rel, on by default): a
-- page the node answers alone is planned with the table unexpanded, none
-- of its partitions planned, and EXPLAIN says so; the window is pruned
-- when the node runs. Any other query is planned as Postgres plans it: no
-- tenant equality, a row lock, oldest first (above), a policy
-- (security.sql), a sub-partitioned table (ph below), the setting off.
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}'
  AND id >= alerts_ulid_floor(now() - interval '3000 days') ORDER BY id DESC LIMIT 50;
SET alerts.custom_scan_one_rel = off;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}'
  AND id >= alerts_ulid_floor(now() - interval '3000 days') ORDER BY id DESC LIMIT 50;
RESET alerts.custom_scan_one_rel;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id > 'ORG_B' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
EXPLAIN (COSTS OFF)
SELECT id FROM pq WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50 FOR SHARE;
SELECT t, f, plain_same(format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 AND id >= alerts_ulid_floor(now() - interval ''3000 days'') ORDER BY id DESC LIMIT $4', t), 'ORG_B', f::jsonb, '01K0', 120) AS one_rel
FROM unnest(ARRAY['pp', 'pq']) t, unnest(ARRAY['{"team": "T1"}', '{"env": "prod", "sev": 3}', '{"rare": "needle"}']) f
ORDER BY t, f;
-- A generic plan made as one relation reads the partitions as they are
-- when it runs: one attached after it was cached (newer rows), then
-- detached.
CREATE TABLE pq_new (LIKE pq INCLUDING DEFAULTS);
ALTER TABLE pq DETACH PARTITION pq_b;
ALTER TABLE pq_b RENAME TO pq_b_out;
CREATE TABLE pq_b PARTITION OF pq FOR VALUES FROM ('01JY') TO ('8');
ANALYZE pq;
PREPARE pq_page(text) AS SELECT left(id, 10) AS id_time FROM pq WHERE organisation_id = $1 AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 3;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pq_page('ORG_C');
EXECUTE pq_page('ORG_C');
INSERT INTO pq_new SELECT * FROM pq_b_out WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 2;
UPDATE pq_new SET id = '9' || substr(id, 2);
ALTER TABLE pq ATTACH PARTITION pq_new FOR VALUES FROM ('9') TO (MAXVALUE);
EXECUTE pq_page('ORG_C');
ALTER TABLE pq DETACH PARTITION pq_new;
EXECUTE pq_page('ORG_C');
RESET plan_cache_mode;
DEALLOCATE pq_page;
DROP TABLE pq_new;
ALTER TABLE pq DETACH PARTITION pq_b;
DROP TABLE pq_b;
ALTER TABLE pq_b_out RENAME TO pq_b;
ALTER TABLE pq ATTACH PARTITION pq_b FOR VALUES FROM ('01JY') TO (MAXVALUE);
-- A partitioned table with no partition yet is planned as one relation
-- too: no row, as Postgres says; its cached generic plan then reads the
-- first partition once it is there.
CREATE TABLE pe (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
                 attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id)) PARTITION BY RANGE (id);
CALL alerts_enable('pe');
SELECT alerts_index_command('pe') \gexec
PREPARE pe_page(text) AS SELECT left(id, 10) AS id_time FROM pe WHERE organisation_id = $1 AND attribute_values @> '{"a": 1}' ORDER BY id DESC LIMIT 5;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pe_page('T');
SELECT plain_same('SELECT id FROM pe WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', 'T', '{"a": 1}', '8', 5) AS no_partition;
CREATE TABLE pe_1 PARTITION OF pe FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
INSERT INTO pe (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' - g * interval '1 minute'), 'T', jsonb_build_object('a', g % 2) FROM generate_series(1, 20) g;
EXECUTE pe_page('T');
SELECT plain_same('SELECT id FROM pe WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', 'T', '{"a": 1}', '8', 5) AS one_partition;
RESET plan_cache_mode;
DEALLOCATE pe_page;
DROP TABLE pe;

-- Every filter of query.sql, keyset pages with a window, on both tables
-- and two more (by id with a default partition, whose ids may overlap the
-- ranges': merged; by id, then by the tenant's hash): searched whole,
-- then a node per partition.
CREATE TABLE pd (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE pd_b PARTITION OF pd FOR VALUES FROM ('01JY') TO (MAXVALUE);
CREATE TABLE pd_rest PARTITION OF pd DEFAULT;
CREATE TABLE ph (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, organisation_id)) PARTITION BY RANGE (id);
CREATE TABLE ph_a PARTITION OF ph FOR VALUES FROM (MINVALUE) TO ('01JY') PARTITION BY HASH (organisation_id);
CREATE TABLE ph_a0 PARTITION OF ph_a FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ph_a1 PARTITION OF ph_a FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE ph_b PARTITION OF ph FOR VALUES FROM ('01JY') TO (MAXVALUE);
INSERT INTO pd SELECT * FROM pq;
INSERT INTO ph SELECT * FROM pq;
CALL alerts_enable('pd');
CALL alerts_enable('ph');
SELECT alerts_index_command('pd') \gexec
SELECT alerts_index_command('ph') \gexec
ANALYZE pd, ph;
EXPLAIN (COSTS OFF)
SELECT id FROM pd WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
SELECT t, d.* FROM unnest(ARRAY['pp', 'pq', 'pd', 'ph']) t, plain_differential(
    format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 AND id >= $5 ORDER BY id DESC LIMIT $4', t),
    'ORG_B', 3, 40) d ORDER BY t;
SET alerts.custom_scan_partitioned = off;
SELECT t, d.* FROM unnest(ARRAY['pp', 'pq', 'pd', 'ph']) t, plain_differential(
    format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 AND id >= $5 ORDER BY id DESC LIMIT $4', t),
    'ORG_C', 2, 40) d ORDER BY t;
RESET alerts.custom_scan_partitioned;
-- No window, pages of 7 after an offset of 3.
SELECT t, d.* FROM unnest(ARRAY['pp', 'pq', 'pd', 'ph']) t, plain_differential(
    format('SELECT id FROM %s WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4 OFFSET 3', t),
    'ORG_C', 2, 7) d ORDER BY t;

-- A rare filter on partitions read in a merge: a partition's first page
-- is one row, but when the tenant keys or GIN answer it, it keeps what
-- else the range it read holds, up to LIMIT + OFFSET rows (one page where
-- there were two), in order, none skipped. Each filter twice: the second
-- time its remembered route sends the first page straight to the index.
SET alerts.custom_scan_partitioned = off;
CREATE FUNCTION merged_pages(q text) RETURNS TABLE (leaf text, rows_out int, pages text, routes text) LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
    RETURN QUERY SELECT p ->> 'Relation Name', (p ->> 'Actual Rows')::numeric::int, p ->> 'Pages', p ->> 'Routes Taken'
        FROM json_array_elements(plan -> 0 -> 'Plan' -> 'Plans' -> 0 -> 'Plans') p;
END $$;
CREATE INDEX pp_keys ON pp USING gin (alerts_keys(organisation_id, id, attribute_values));
ANALYZE pp;
SELECT run, f, plain_same('SELECT id FROM pp WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', 'ORG_B', f::jsonb, '8', 120)
FROM generate_series(1, 2) run, unnest(ARRAY['{"team": "T37"}', '{"team": "T20", "env": "prod"}', '{"rare": "needle"}']) f
ORDER BY run, f;
SELECT count(*) AS primed FROM (SELECT id FROM pp WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"team": "T37"}' ORDER BY id DESC LIMIT 10) s;
SELECT * FROM merged_pages('SELECT id FROM pp WHERE organisation_id = ''ORG_B'' AND attribute_values @> ''{"team": "T37"}'' ORDER BY id DESC LIMIT 10');
BEGIN;
DROP INDEX pp_keys;
CREATE INDEX pp_gin ON pp USING gin (attribute_values jsonb_path_ops);
ANALYZE pp;
SELECT run, f, plain_same('SELECT id FROM pp WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4', 'ORG_B', f::jsonb, '8', 120)
FROM generate_series(1, 2) run, unnest(ARRAY['{"team": "T37"}', '{"team": "T20", "env": "prod"}']) f
ORDER BY run, f;
SELECT count(*) AS primed FROM (SELECT id FROM pp WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"team": "T37"}' ORDER BY id DESC LIMIT 10) s;
SELECT * FROM merged_pages('SELECT id FROM pp WHERE organisation_id = ''ORG_B'' AND attribute_values @> ''{"team": "T37"}'' ORDER BY id DESC LIMIT 10');
ROLLBACK;
RESET alerts.custom_scan_partitioned;

-- A remembered route ends when an answer fetches more than 5,000 heap rows
-- (a count, the same on a busy machine): here GIN's bitmap for a value
-- another tenant has 6,000 times. That answer is kept for as long as a
-- route: the next calls walk, and leave the walk for a rare path only
-- once it has cost as much (here never: the tenant's window is shorter),
-- where they used to find the value rare again and pay GIN every other
-- call. A value with 100 such rows keeps its route. The ids below the
-- ULID range (a window of their own, no bound on id) are walked, not sent
-- to the remembered route.
CREATE TABLE fr (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id));
INSERT INTO fr SELECT * FROM alerts WHERE organisation_id = 'ORG_C';
INSERT INTO fr (id, organisation_id, created_at, priority_id, attribute_values)
SELECT '01JA' || lpad(g::text, 22, '0'), 'ORG_FR', '2024-01-01', 1,
       CASE WHEN g <= 6000 THEN '{"crowd": "many"}' ELSE '{"crowd": "few"}' END::jsonb
FROM generate_series(1, 6100) g;
INSERT INTO fr (id, organisation_id, created_at, priority_id, attribute_values)
VALUES ('01JA0', 'ORG_C', '2024-01-01', 1, '{"crowd": "many"}'), ('01JA1', 'ORG_C', '2024-01-01', 1, '{"crowd": "few"}');
CALL alerts_enable('fr');
SELECT alerts_index_command('fr') \gexec
CREATE INDEX fr_gin ON fr USING gin (attribute_values jsonb_path_ops);
ANALYZE fr;
CREATE FUNCTION fr_route(v text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format('EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) SELECT id FROM fr WHERE organisation_id = %L AND attribute_values @> %L ORDER BY id DESC LIMIT 10',
                   'ORG_C', jsonb_build_object('crowd', v)) INTO plan;
    RETURN format('%s row(s): %s', (plan -> 0 -> 'Plan' ->> 'Actual Rows')::numeric::int, jsonb_path_query_first(plan, '$.**."Routes Taken"') #>> '{}');
END $$;
SELECT v, call, fr_route(v) AS routes FROM unnest(ARRAY['many', 'few']) v, generate_series(1, 4) call ORDER BY v, call;
DROP TABLE fr;
DROP FUNCTION fr_route(text);

-- Plans cached before alerts_disable: planned again, no node, same rows.
PREPARE odd_page(jsonb) AS SELECT id FROM odd WHERE organisation_id = 'ORG_C' AND attribute_values @> $1 ORDER BY id DESC LIMIT 20;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE odd_page('{"team": "T0"}');
CREATE TEMP TABLE odd_before AS EXECUTE odd_page('{"team": "T0"}');
CALL alerts_disable('odd');
EXPLAIN (COSTS OFF) EXECUTE odd_page('{"team": "T0"}');
CREATE TEMP TABLE odd_after AS EXECUTE odd_page('{"team": "T0"}');
SELECT (SELECT array_agg(id) FROM odd_before) = (SELECT array_agg(id) FROM odd_after) AS same_rows, (SELECT count(*) FROM odd_after) AS rows;
RESET plan_cache_mode;

-- A pagination index in another collation than the column's ("POSIX"
-- against "C"): the walk's order need not be the query's, so the node is
-- not offered; with the column's collation it is.
CREATE TABLE coll (LIKE alerts INCLUDING DEFAULTS);
INSERT INTO coll SELECT * FROM alerts WHERE organisation_id = 'ORG_C';
CREATE INDEX coll_posix ON coll (organisation_id, id COLLATE "POSIX");
ANALYZE coll;
SELECT plain_same('SELECT id FROM coll WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_C', '{"team": "T1"}');
CREATE INDEX coll_c ON coll (organisation_id, id);
SELECT plain_same('SELECT id FROM coll WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_C', '{"team": "T1"}');
DROP TABLE coll;

-- varchar ids and tenants (what ORMs make; varchar(n) too): the node, and
-- alerts_search's direct walk, read them as text. char(n) is not text:
-- Postgres' own plan, and alerts_search says which column to change.
CREATE TABLE vc (LIKE alerts INCLUDING DEFAULTS);
ALTER TABLE vc ALTER COLUMN id TYPE varchar(26), ALTER COLUMN organisation_id TYPE varchar;
INSERT INTO vc SELECT * FROM alerts WHERE organisation_id = 'ORG_C';
CREATE INDEX ON vc (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE UNIQUE INDEX ON vc (id);
ANALYZE vc;
SELECT plain_same('SELECT id FROM vc WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_C', '{"team": "T1"}');
SELECT plain_same('SELECT id FROM vc WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id LIMIT 50', 'ORG_C', '{"team": "T1"}', '01K');
SELECT array(SELECT id FROM alerts_search(NULL::vc, 'ORG_C', '{"team": "T1"}', '-infinity', NULL, 30))
     = array(SELECT id FROM vc WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 30) AS search_same;
ALTER TABLE vc ALTER COLUMN organisation_id TYPE char(12);
SELECT plain_same('SELECT id FROM vc WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_C', '{"team": "T1"}');
SELECT count(*) FROM alerts_search(NULL::vc, 'ORG_C', '{"team": "T1"}');
DROP TABLE vc;

-- Off for the session: Postgres' own plan.
SET alerts.custom_scan = off;
EXPLAIN (COSTS OFF)
SELECT * FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
-- A bit(128) bitmap column: the node tests the folded masks in the index.
ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit(128) USING alerts_bloom(attribute_values, 128);
VACUUM ANALYZE alerts;
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 AND id >= $5 ORDER BY id DESC LIMIT $4',
    'ORG_A', 3);
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 ORDER BY id ASC LIMIT $4',
    'ORG_B', 2, 50, true);
ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit(512) USING alerts_bloom(attribute_values);
VACUUM ANALYZE alerts;
RESET alerts.custom_scan;

-- A partition attached while a plain query reads a partitioned table in
-- pages, one search each. ATTACH takes only SHARE UPDATE EXCLUSIVE on the
-- parent, so it may commit between two of them. A second client
-- (tests/clients/attach_plain_searcher.sql) reads every match of p_attach
-- (800: pages of 50, then 100...) waiting, after its first page, on an
-- advisory lock this session holds while it attaches p_attach_2: through
-- a qual of the query (the direct walk: the later pages read the
-- partitions of the query's plan, and the query returns the rows of
-- those, as Postgres' plan does), then under
-- a policy (the search reads through statements, which would see the new
-- partition: the query ends with a serialization failure).
CREATE TABLE p_attach (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                       attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE TABLE p_attach_1 PARTITION OF p_attach FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE p_attach_2 PARTITION OF p_attach FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
INSERT INTO p_attach SELECT alerts_ulid(timestamptz '2025-01-01' + g * interval '1 hour'), 'ORG_A', timestamptz '2025-01-01' + g * interval '1 hour',
                            jsonb_build_object('env', CASE WHEN g % 10 = 0 THEN 'prod' ELSE 'dev' END)
FROM generate_series(1, 8000) g;
CALL alerts_enable('p_attach');
SELECT alerts_index_command('p_attach') \gexec
CREATE FUNCTION attach_wait() RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN PERFORM pg_advisory_lock_shared(4343); PERFORM pg_advisory_unlock_shared(4343); RETURN true; END $$;
CREATE POLICY attach_gate ON p_attach USING (attach_wait());
CREATE TABLE attach_how (who text, gate_in_query boolean);
CREATE TABLE attach_result (outcome text);
CREATE ROLE regress_alerts_attach;
GRANT SELECT ON p_attach TO regress_alerts_attach;
GRANT SELECT ON attach_how TO regress_alerts_attach;
GRANT INSERT ON attach_result TO regress_alerts_attach;
ANALYZE p_attach;
SELECT count(*) AS matches_of_both FROM (SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC) s;
EXPLAIN (COSTS OFF)
SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' AND attach_wait() ORDER BY id DESC;
CREATE PROCEDURE attach_while_read(who text, gate_in_query boolean) LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM attach_how; DELETE FROM attach_result;
    INSERT INTO attach_how VALUES (who, gate_in_query);
    ALTER TABLE p_attach DETACH PARTITION p_attach_2;
    COMMIT;
END $$;
CREATE FUNCTION wait_for(what text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..600 LOOP
        IF what = 'gate' THEN
            EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4343 AND NOT granted);
        ELSE
            EXIT WHEN EXISTS (SELECT 1 FROM attach_result);
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN CASE WHEN what = 'gate' THEN (SELECT count(*) || ' waiting' FROM pg_locks WHERE locktype = 'advisory' AND objid = 4343 AND NOT granted)
                ELSE (SELECT outcome FROM attach_result) END;
END $$;
\setenv PGDATABASE :DBNAME
-- through a qual: the direct walk
CALL attach_while_read('postgres', true);
SELECT pg_advisory_lock(4343) IS NOT NULL AS gate_closed;
\! psql -X -q -f tests/clients/attach_plain_searcher.sql >/dev/null 2>&1 &
SELECT wait_for('gate');
ALTER TABLE p_attach ATTACH PARTITION p_attach_2 FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
SELECT pg_advisory_unlock(4343) AS gate_opened;
SELECT wait_for('result') AS outcome, (SELECT count(*) FROM p_attach_1 WHERE attribute_values @> '{"env": "prod"}') AS first_partitions_rows;
-- under a policy: statements
CALL attach_while_read('regress_alerts_attach', false);
ALTER TABLE p_attach ENABLE ROW LEVEL SECURITY;
SELECT pg_advisory_lock(4343) IS NOT NULL AS gate_closed;
\! psql -X -q -f tests/clients/attach_plain_searcher.sql >/dev/null 2>&1 &
SELECT wait_for('gate');
ALTER TABLE p_attach ATTACH PARTITION p_attach_2 FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
SELECT pg_advisory_unlock(4343) AS gate_opened;
SELECT wait_for('result') AS outcome;
-- A role granted only the partitioned table, with a node per partition:
-- a partition's node is offered only where the role reads the partition
-- as it is (its search's statements name it, checked with its own
-- privileges); the query answers as Postgres' plan does.
SET alerts.custom_scan_partitioned = off;
SET ROLE regress_alerts_attach;
SELECT count(*) AS parent_granted_only FROM (SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                                             ORDER BY id DESC LIMIT 50) s;
RESET ROLE;
-- A generic plan made by a role that reads the partitions as they are,
-- run by roles that do not: one granted only the partitioned table, one a
-- partition's own policy hides its rows from (Postgres ignores it through
-- the partitioned table). Postgres plans again for each new role (the
-- plan depended on who made it), and every page is Postgres' own.
ALTER TABLE p_attach DISABLE ROW LEVEL SECURITY;
CREATE TABLE role_pages (step int, who text, rows bigint, newest text, oldest text);
PREPARE role_page(int) AS INSERT INTO role_pages SELECT $1, current_user, count(*), max(id), min(id)
    FROM (SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 600) s;
GRANT INSERT ON role_pages TO regress_alerts_attach;
SET alerts.custom_scan = off;
EXECUTE role_page(0);
RESET alerts.custom_scan;
SET plan_cache_mode = force_generic_plan;
EXECUTE role_page(1);
-- (the INSERT's subquery is named "*SELECT*" before PostgreSQL 19, then
-- unnamed_subquery: the name is left out)
CREATE FUNCTION plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT regexp_replace(l, 'Subquery Scan on .*$', 'Subquery Scan');
  END LOOP;
END $$;
SELECT plan_lines('EXECUTE role_page(1)') AS "QUERY PLAN";
DROP FUNCTION plan_lines(text);
SET ROLE regress_alerts_attach;
EXECUTE role_page(2);
RESET ROLE;
GRANT SELECT ON p_attach_1, p_attach_2 TO regress_alerts_attach;
ALTER TABLE p_attach_2 ENABLE ROW LEVEL SECURITY;
EXECUTE role_page(3);
SET ROLE regress_alerts_attach;
EXECUTE role_page(4);
RESET ROLE;
RESET plan_cache_mode;
-- Through a view, by a role granted only the view: the table and its
-- partitions read as the view's owner, by a node per partition and by
-- the node that searches the table whole.
CREATE VIEW p_attach_view AS SELECT * FROM p_attach;
REVOKE ALL ON p_attach, p_attach_1, p_attach_2 FROM regress_alerts_attach;
GRANT SELECT ON p_attach_view TO regress_alerts_attach;
PREPARE view_page(int) AS INSERT INTO role_pages SELECT $1, current_user, count(*), max(id), min(id)
    FROM (SELECT id FROM p_attach_view WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 600) s;
SET ROLE regress_alerts_attach;
EXECUTE view_page(5);
RESET alerts.custom_scan_partitioned;
EXECUTE view_page(6);
EXPLAIN (COSTS OFF) SELECT id FROM p_attach_view WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 600;
SET alerts.custom_scan_partitioned = off;
RESET ROLE;
SELECT step, who, rows, (newest, oldest) = (SELECT newest, oldest FROM role_pages WHERE step = 0) AS postgres_page
FROM role_pages ORDER BY step;
DEALLOCATE view_page;
DROP VIEW p_attach_view;
DEALLOCATE role_page;
DROP TABLE role_pages;
RESET alerts.custom_scan_partitioned;
DROP TABLE p_attach, attach_how, attach_result;
DROP PROCEDURE attach_while_read(text, boolean);
DROP FUNCTION attach_wait(), wait_for(text);
DROP ROLE regress_alerts_attach;

DROP TABLE odd, pp, pq, pd, ph, plain_plans;
DROP INDEX plain_keys;
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET session_preload_libraries', current_database()); END $$;
