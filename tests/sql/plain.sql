-- Plain SQL through the custom scan: the queries apps send
-- (organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT n),
-- planned with the AlertsSearch node once the library is loaded, checked
-- against the same queries with alerts.custom_scan off (Postgres' own plans
-- and its own @>): literal and parameterised, generic plans, cursors,
-- snapshots, row-level security, views, joins, subqueries, hostile
-- values. Tables of other shapes (ids that repeat, partitioned tables, plan
-- invalidation...) are in plain_tables.sql, which runs next.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never

-- Loaded for every session of the database, as the README says; a new
-- session has the node before it calls any alerts function.
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET session_preload_libraries = %L', current_database(), 'alerts'); END $$;
\c
SET client_min_messages = warning;
SHOW alerts.custom_scan;
EXPLAIN (COSTS OFF)
SELECT * FROM alerts
WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
ORDER BY id DESC LIMIT 50;
-- The tenant-keys index too, so that rare filters take it.
CREATE INDEX plain_keys ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
ANALYZE alerts;

-- The differential: one query text, run with the node and without it.
-- Returns the ids in the query's order; counts the plans that used the node.
CREATE TABLE plain_plans (custom boolean);
CREATE FUNCTION plain_ids(q text, custom boolean, org text, f jsonb, cur text DEFAULT '8', lim int DEFAULT 50, lo text DEFAULT '')
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    ids text[] := '{}';
    v text;
    line text;
    used boolean := false;
BEGIN
    PERFORM set_config('alerts.custom_scan', custom::text, true);
    IF custom THEN
        FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q USING org, f, cur, lim, lo LOOP
            used := used OR line LIKE '%AlertsSearch%';
        END LOOP;
        INSERT INTO plain_plans VALUES (used);
    END IF;
    -- run as a statement of its own, as apps send it (a sub-query is
    -- planned with its outer query)
    FOR v IN EXECUTE q USING org, f, cur, lim, lo LOOP
        ids := ids || v;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'on', true);
    RETURN ids;
END $$;
-- Mismatched pages of `q` for every filter of query.sql, page by page
-- (`pages` deep, cursor = the last id), for tenant `org`.
-- Oldest first (`ascending`), the pages go up: the cursor starts at ''.
CREATE FUNCTION plain_differential(q text, org text, pages int, lim int DEFAULT 50, ascending boolean DEFAULT false)
RETURNS TABLE (filters bigint, pages_compared bigint, mismatched bigint, node_used bigint, rows_seen bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    got text[];
    want text[];
    cur text;
    compared int := 0;
    bad int := 0;
    seen bigint := 0;
BEGIN
    DELETE FROM plain_plans;
    FOR r IN SELECT * FROM filters ORDER BY n LOOP
        cur := CASE WHEN ascending THEN '' ELSE '8' END;
        FOR p IN 1 .. pages LOOP
            got := plain_ids(q, true, org, r.f, cur, lim, alerts_ulid_floor(r.since));
            want := plain_ids(q, false, org, r.f, cur, lim, alerts_ulid_floor(r.since));
            compared := compared + 1;
            seen := seen + cardinality(got);
            IF got IS DISTINCT FROM want THEN
                bad := bad + 1;
                RAISE NOTICE 'filter % page %: % rows, want %', r.n, p, cardinality(got), cardinality(want);
            END IF;
            EXIT WHEN cardinality(want) < lim;
            cur := want[lim];
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT (SELECT count(*) FROM filters), compared::bigint, bad::bigint,
                        (SELECT count(*) FILTER (WHERE custom) FROM plain_plans), seen;
END $$;

-- The query apps send, its keyset pages, with a window (id >= floor).
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 AND id >= $5 ORDER BY id DESC LIMIT $4',
    'ORG_A', 4);
-- No window, a smaller tenant, pages of 7 with an offset.
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4 OFFSET 3',
    'ORG_C', 3, 7);
-- The filter form of the README (alerts_attrs_match), with a column qual.
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND alerts_attrs_match(attribute_values, $2) AND id < $3 AND priority_id IN (1, 2) ORDER BY id DESC LIMIT $4',
    'ORG_B', 2);
-- One of several values, as ORMs write it: containments OR'ed.
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR attribute_values @> ''{"team": "T2"}'') AND id < $3 ORDER BY id DESC LIMIT $4',
    'ORG_B', 2);
-- <@ written the other way round, two containments, bounds <=, >, BETWEEN.
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE $2 <@ attribute_values AND attribute_values @> ''{"env": "prod"}'' AND organisation_id = $1 AND id <= $3 AND id > $5 ORDER BY id DESC LIMIT $4',
    'ORG_A', 2);
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id BETWEEN $5 AND $3 ORDER BY id DESC LIMIT $4',
    'ORG_B', 2);

-- Oldest first (ORDER BY id ASC): the same walk and rare paths, read
-- upward; keyset pages above the last id, with a window, without one,
-- below an upper bound, with a column qual, OR'ed containments.
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 AND id >= $5 ORDER BY id ASC LIMIT $4',
    'ORG_A', 4, ascending => true);
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 ORDER BY id LIMIT $4 OFFSET 3',
    'ORG_C', 3, 7, true);
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND alerts_attrs_match(attribute_values, $2) AND id > $3 AND id < $5 AND priority_id IN (1, 2) ORDER BY id ASC LIMIT $4',
    'ORG_B', 2, ascending => true);
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR attribute_values @> ''{"team": "T2"}'') AND id >= $3 AND id <= $5 ORDER BY id ASC LIMIT $4',
    'ORG_A', 2, ascending => true);
-- The routes oldest first: the walk, then the tenant keys (oldest weeks
-- first) for a rare filter; with GIN instead of the keys, then GIN.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"rare": "needle"}' ORDER BY id LIMIT 10;
BEGIN;
DROP INDEX plain_keys;
CREATE INDEX plain_gin ON alerts USING gin (attribute_values jsonb_path_ops);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"rare": "needle"}' ORDER BY id LIMIT 10;
SELECT * FROM plain_differential(
    'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id > $3 AND id >= $5 ORDER BY id ASC LIMIT $4',
    'ORG_A', 2, ascending => true);
ROLLBACK;

-- id <= x where id is COLLATE "C" is the window's end (id < x || '\x01'):
-- a page below the 2000th newest row starts there, as with id < x.
CREATE FUNCTION plain_walked(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
    RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Index Entries Walked')::bigint;
END $$;
SELECT plain_walked(format('SELECT id FROM alerts WHERE organisation_id = %L AND attribute_values @> %L AND id <= %L ORDER BY id DESC LIMIT 5',
                           'ORG_A', '{"env": "prod"}', x)) < 100 AS from_the_bound
FROM (SELECT id AS x FROM alerts WHERE organisation_id = 'ORG_A' ORDER BY id DESC OFFSET 2000 LIMIT 1) s;

-- Shapes one by one: with the node and without, the same rows.
CREATE FUNCTION plain_same(q text, org text DEFAULT 'ORG_A', f jsonb DEFAULT '{}', cur text DEFAULT '8', lim int DEFAULT 50)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got text[];
    want text[];
BEGIN
    DELETE FROM plain_plans;
    got := plain_ids(q, true, org, f, cur, lim);
    want := plain_ids(q, false, org, f, cur, lim);
    RETURN format('%s rows, %s, %s', cardinality(want),
                  CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END,
                  CASE WHEN (SELECT bool_and(custom) FROM plain_plans) THEN 'node' ELSE 'no node' END);
END $$;
SELECT shape, plain_same(q, f => f::jsonb) AS result FROM (VALUES
    ('arrays: all of them', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"feature": ["F1", "F2"]}'),
    ('empty array: any array', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"feature": []}'),
    ('nested object', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"meta": {"src": "x1"}}'),
    ('number written 5.0', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"sev": 5.0, "ack": true}'),
    ('not an object', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '["prod"]'),
    ('a null value', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"team": null}'),
    ('the needle, all time', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"rare": "needle"}'),
    ('no match', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"team": "NOPE"}'),
    ('NULL filter', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', NULL),
    ('NULL limit: all rows', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT NULL', '{"team": "T3"}'),
    ('LIMIT 0', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 0', '{"team": "T3"}'),
    ('no limit', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC', '{"team": "T2", "env": "staging"}'),
    ('offset 500', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 20 OFFSET 500', '{"env": "prod"}'),
    ('with ties', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC FETCH FIRST 30 ROWS WITH TIES', '{"env": "prod"}'),
    ('a stable function of the tenant', 'SELECT id FROM alerts WHERE organisation_id = upper(lower($1)) AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('volatile quals stay with the executor', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND random() >= 0 ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('a filter from a subquery', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> (SELECT ''{"team": "T1"}''::jsonb) ORDER BY id DESC LIMIT 50', '{}'),
    ('whole rows', 'SELECT a::text FROM alerts a WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('in a CTE', 'WITH p AS (SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50) SELECT id FROM p', '{"team": "T1"}'),
    ('in a subquery, then sorted again', 'SELECT id FROM (SELECT id, priority_id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 40) s ORDER BY priority_id, id', '{"team": "T1"}'),
    ('joined', 'SELECT a.id FROM alerts a JOIN (VALUES (''ORG_A'')) o(org) ON a.organisation_id = o.org WHERE a.attribute_values @> $2 AND o.org = $1 ORDER BY a.id DESC LIMIT 50', '{"team": "T1"}'),
    ('a column equal to a value (the search tests it)', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id = 2 ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('a column in a list', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id IN (1, 3) ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column in a list with a NULL', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id = ANY (ARRAY[3, NULL]) ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column in an empty list', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id = ANY (''{}'') ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column in a NULL list', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id = ANY (NULL::int[]) ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column twice', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id IN (1, 2) AND priority_id = 2 ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column, another type (left to the executor)', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id = 2::bigint ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('a column not equal (left to the executor)', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id <> ALL (ARRAY[1, 2]) ORDER BY id DESC LIMIT 50', '{"env": "prod"}'),
    ('one of two values (containments OR''ed)', 'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR attribute_values @> ''{"team": "T3"}'') ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('one of three, <@ among them', 'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR ''{"team": "T2"}'' <@ attribute_values OR attribute_values @> ''{"team": ["T5"], "env": "prod"}'') ORDER BY id DESC LIMIT 50', '{"rare": "needle", "team": "T9"}'),
    ('OR''ed, a NULL alternative drops out', 'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR attribute_values @> ''{"team": "T3"}'') ORDER BY id DESC LIMIT 50', NULL),
    ('OR''ed, no key in common: every row is read', 'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR attribute_values @> ''{"env": "staging"}'') ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('OR''ed with another column (not a condition it reads)', 'SELECT id FROM alerts WHERE organisation_id = $1 AND (attribute_values @> $2 OR priority_id = 1) ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('ascending', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id LIMIT 50', '{"team": "T1"}'),
    ('ascending, the needle, all time', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 50', '{"rare": "needle"}'),
    ('ascending, no limit', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC', '{"team": "T2", "env": "staging"}'),
    ('ascending, offset 500', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 20 OFFSET 500', '{"env": "prod"}'),
    ('ascending, with ties', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC FETCH FIRST 30 ROWS WITH TIES', '{"env": "prod"}'),
    ('ascending, no match', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 50', '{"team": "NOPE"}'),
    ('ctid: not offered', 'SELECT ctid::text FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('FOR UPDATE: not offered', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50 FOR UPDATE', '{"team": "T1"}'),
    ('another collation: not offered', 'SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id COLLATE "POSIX" DESC LIMIT 50', '{"team": "T1"}')
) s(shape, q, f);
-- Compiled by JIT where the server has it: the node's rows are heap
-- tuples, deformed by generated code as far as the quals and the target
-- read them (columns after the attributes, whole rows).
SET jit = on;
SET jit_above_cost = 0;
SET jit_inline_above_cost = 0;
SET jit_optimize_above_cost = 0;
SELECT shape, plain_same(q, f => f::jsonb) AS result FROM (VALUES
    ('JIT: later columns in quals and target', 'SELECT id || priority_id || created_at || attribute_values_bitmap::text FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND priority_id > 0 AND created_at > ''-infinity'' ORDER BY id DESC LIMIT 50', '{"team": "T1"}'),
    ('JIT: whole rows', 'SELECT a::text FROM alerts a WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', '{"env": "prod"}')
) s(shape, q, f);
-- A column added with a default after the rows were stored: their tuples
-- are shorter than the table's, and the column comes from the catalog, in
-- the target and in a column qual the search tests.
ALTER TABLE alerts ADD COLUMN later int DEFAULT 7;
SELECT shape, plain_same(q, f => f::jsonb) AS result FROM (VALUES
    ('JIT: a column added with a default', 'SELECT id || '':'' || later FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND later = 7 ORDER BY id DESC LIMIT 50', '{"team": "T1"}')
) s(shape, q, f);
ALTER TABLE alerts DROP COLUMN later;
RESET jit;
RESET jit_above_cost;
RESET jit_inline_above_cost;
RESET jit_optimize_above_cost;
-- A NULL tenant: no rows, not an error.
SELECT plain_same('SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', NULL, '{"team": "T1"}');
-- A filter alerts_attrs_match refuses is its ERROR, with or without the node.
SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND alerts_attrs_match(attribute_values, '{"team": [["T1"]]}') ORDER BY id DESC LIMIT 5;
SET alerts.custom_scan = off;
SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND alerts_attrs_match(attribute_values, '{"team": [["T1"]]}') ORDER BY id DESC LIMIT 5;
RESET alerts.custom_scan;

-- EXPLAIN ANALYZE shows what the searches did.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM alerts WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T0", "env": "prod"}' ORDER BY id DESC LIMIT 10;
-- a column in a list: the search tests it on the rows it fetches
EXPLAIN (COSTS OFF)
SELECT id FROM alerts WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"env": "prod"}' AND priority_id IN (1, 3) ORDER BY id DESC LIMIT 10;
SET alerts.custom_scan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM alerts WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T0", "env": "prod"}' ORDER BY id DESC LIMIT 10;
RESET alerts.custom_scan;

-- Prepared statements: plpgsql's own (custom plans for five runs, then
-- the plan cache's choice; then forced generic), 8 runs each with other
-- values, the same rows as without the node; EXPLAIN of a generic plan.
CREATE FUNCTION prepared_page(org text, f jsonb, cur text, lim int) RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN ARRAY(SELECT id FROM alerts WHERE organisation_id = org AND attribute_values @> f AND id < cur ORDER BY id DESC LIMIT lim);
END $$;
CREATE FUNCTION prepared_runs(mode text) RETURNS TABLE (runs bigint, same bigint) LANGUAGE plpgsql AS $$
DECLARE
    got text[];
    want text[];
    r record;
    done int := 0;
    ok int := 0;
BEGIN
    PERFORM set_config('plan_cache_mode', mode, true);
    FOR r IN SELECT filters.f FROM filters WHERE filters.n % 7 = 0 ORDER BY filters.n LIMIT 8 LOOP
        got := prepared_page('ORG_A', r.f, '8', 10 + done * 10);
        PERFORM set_config('alerts.custom_scan', 'off', true);
        want := ARRAY(SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> r.f ORDER BY id DESC LIMIT 10 + done * 10);
        PERFORM set_config('alerts.custom_scan', 'on', true);
        done := done + 1;
        ok := ok + (got IS NOT DISTINCT FROM want)::int;
    END LOOP;
    RETURN QUERY SELECT done::bigint, ok::bigint;
END $$;
SELECT * FROM prepared_runs('auto');
SELECT * FROM prepared_runs('force_generic_plan');
PREPARE page(text, jsonb, text, int) AS
SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 AND id < $3 ORDER BY id DESC LIMIT $4;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE page('ORG_A', '{"team": "T1"}', '8', 50);
RESET plan_cache_mode;

-- A cursor without LIMIT, fetched row by row, in a transaction that
-- inserts a newer matching row and deletes a later one after it was
-- opened: the cursor's snapshot holds (both undone after).
EXPLAIN (COSTS OFF)
DECLARE c CURSOR FOR SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"env": "staging"}' ORDER BY id DESC;
CREATE FUNCTION cursor_pages(f jsonb, wanted int) RETURNS TABLE (same boolean, snapshot_held boolean)
LANGUAGE plpgsql AS $$
DECLARE
    c refcursor;
    want text[];
    got text[] := '{}';
    row_id text;
    ins text := '7ZZZZZZZZZZZZZZZZZZZZZZZZY';
    gone alerts;
BEGIN
    want := ARRAY(SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> f ORDER BY id DESC LIMIT wanted);
    OPEN c NO SCROLL FOR SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> f ORDER BY id DESC;
    INSERT INTO alerts (id, organisation_id, created_at, priority_id, attribute_values) VALUES (ins, 'ORG_B', now(), 1, f);
    DELETE FROM alerts WHERE id = want[least(cardinality(want), 3)] RETURNING * INTO gone;
    FOR i IN 1 .. wanted LOOP
        FETCH c INTO row_id;
        EXIT WHEN NOT FOUND;
        got := got || row_id;
    END LOOP;
    CLOSE c;
    DELETE FROM alerts WHERE id = ins;
    IF gone.id IS NOT NULL THEN
        INSERT INTO alerts SELECT (gone).*;
    END IF;
    RETURN QUERY SELECT got = want, NOT (ins = ANY (got));
END $$;
SELECT * FROM cursor_pages('{"env": "staging"}', 240);
SELECT * FROM cursor_pages('{"rare": "needle"}', 15);
-- Oldest first: a cursor fetched row by row, and a generic plan run 8
-- times with other filters, the same rows as without the node.
CREATE FUNCTION prepared_page_asc(org text, f jsonb, cur text, lim int) RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN ARRAY(SELECT id FROM alerts WHERE organisation_id = org AND attribute_values @> f AND id > cur ORDER BY id LIMIT lim);
END $$;
CREATE FUNCTION ascending_runs() RETURNS TABLE (runs bigint, same bigint) LANGUAGE plpgsql AS $$
DECLARE
    c refcursor;
    row_id text;
    fetched text[];
    page text[];
    want_fetched text[];
    want_page text[];
    r record;
    done int := 0;
    ok int := 0;
BEGIN
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    FOR r IN SELECT filters.f FROM filters WHERE filters.n % 5 = 0 ORDER BY filters.n LIMIT 8 LOOP
        fetched := '{}';
        OPEN c NO SCROLL FOR SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> r.f ORDER BY id;
        FOR i IN 1 .. 300 LOOP
            FETCH c INTO row_id;
            EXIT WHEN NOT FOUND;
            fetched := fetched || row_id;
        END LOOP;
        CLOSE c;
        page := prepared_page_asc('ORG_A', r.f, '01JX', 25);
        PERFORM set_config('alerts.custom_scan', 'off', true);
        want_fetched := ARRAY(SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> r.f ORDER BY id LIMIT 300);
        want_page := ARRAY(SELECT id FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> r.f AND id > '01JX' ORDER BY id LIMIT 25);
        PERFORM set_config('alerts.custom_scan', 'on', true);
        done := done + 1;
        ok := ok + (fetched IS NOT DISTINCT FROM want_fetched AND page IS NOT DISTINCT FROM want_page)::int;
    END LOOP;
    RETURN QUERY SELECT done::bigint, ok::bigint;
END $$;
SELECT * FROM ascending_runs();

-- Row-level security: the policy's quals still hold on every row.
CREATE ROLE plain_reader;
GRANT SELECT ON alerts, filters, plain_plans TO plain_reader;
GRANT INSERT, DELETE ON plain_plans TO plain_reader;
ALTER TABLE alerts ENABLE ROW LEVEL SECURITY;
CREATE POLICY plain_prod ON alerts TO plain_reader USING (attribute_values ->> 'env' = 'prod' AND priority_id <> 2);
SET ROLE plain_reader;
SELECT plain_same('SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', '{"team": "T1"}');
SELECT plain_same('SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', '{"env": "staging"}');
SELECT plain_same('SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 50', 'ORG_A', '{"team": "T1"}');
SELECT count(*) = 0 AS policy_held FROM (SELECT * FROM alerts WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 200) p
WHERE attribute_values ->> 'env' <> 'prod' OR priority_id = 2;
RESET ROLE;
DROP POLICY plain_prod ON alerts;
ALTER TABLE alerts DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON alerts, filters, plain_plans FROM plain_reader;
DROP ROLE plain_reader;

-- A view over the table.
CREATE VIEW alerts_recent AS SELECT id, organisation_id, priority_id, attribute_values FROM alerts WHERE priority_id > 1;
SELECT plain_same('SELECT id FROM alerts_recent WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', '{"team": "T1"}');
SELECT plain_same('SELECT id FROM alerts_recent WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id ASC LIMIT 50', 'ORG_A', '{"team": "T1"}');
-- Read by a role granted only the view: Postgres reads the table as the
-- view's owner (the owner's privileges and policies, not the reader's),
-- and so do the searches (the rare filter's take the tenant keys).
CREATE ROLE plain_viewer;
GRANT SELECT ON alerts_recent, filters TO plain_viewer;
GRANT SELECT, INSERT, DELETE ON plain_plans TO plain_viewer;
ALTER TABLE alerts ENABLE ROW LEVEL SECURITY;
CREATE POLICY plain_nothing ON alerts TO plain_viewer USING (false);
SET ROLE plain_viewer;
EXPLAIN (COSTS OFF)
SELECT id FROM alerts_recent WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' ORDER BY id DESC LIMIT 50;
SELECT f, plain_same('SELECT id FROM alerts_recent WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', f::jsonb) AS newest,
          plain_same('SELECT id FROM alerts_recent WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id LIMIT 50', 'ORG_A', f::jsonb) AS oldest
FROM unnest(ARRAY['{"team": "T1"}', '{"rare": "needle"}']) f;
RESET ROLE;
-- A view owned by a role under a policy: Postgres applies the owner's
-- policy, and the node steps aside (its searches would run the policy's
-- expression as the owner, where Postgres runs it as the reader).
CREATE ROLE plain_view_owner;
GRANT SELECT ON alerts TO plain_view_owner;
CREATE POLICY plain_owner_prod ON alerts TO plain_view_owner USING (attribute_values ->> 'env' = 'prod');
ALTER VIEW alerts_recent OWNER TO plain_view_owner;
SET ROLE plain_viewer;
SELECT plain_same('SELECT id FROM alerts_recent WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', '{"team": "T1"}') AS owner_policy;
RESET ROLE;
DROP VIEW alerts_recent;
DROP POLICY plain_nothing ON alerts;
DROP POLICY plain_owner_prod ON alerts;
ALTER TABLE alerts DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON alerts FROM plain_view_owner;
REVOKE ALL ON filters, plain_plans FROM plain_viewer;
DROP ROLE plain_viewer, plain_view_owner;
-- A role granted only the columns it reads: Postgres checks those, the
-- searches' statements read whole rows, so the node steps aside.
CREATE ROLE plain_columns;
GRANT SELECT (id, organisation_id, attribute_values) ON alerts TO plain_columns;
GRANT SELECT, INSERT, DELETE ON plain_plans TO plain_columns;
SET ROLE plain_columns;
SELECT f, plain_same('SELECT id FROM alerts WHERE organisation_id = $1 AND attribute_values @> $2 ORDER BY id DESC LIMIT 50', 'ORG_A', f::jsonb) AS columns_granted
FROM unnest(ARRAY['{"team": "T1"}', '{"rare": "needle"}']) f;
RESET ROLE;
REVOKE ALL ON alerts, plain_plans FROM plain_columns;
DROP ROLE plain_columns;
