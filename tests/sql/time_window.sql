-- The created_at window (custom_scan/window.rs). Plain SQL bounded by
-- created_at, the way applications write a window: every page equals
-- Postgres' own plan for it, before and after the table declares how its
-- ids follow created_at (CHECK (alerts_ulid_near(id, created_at, ...))).
-- Declared, the node's window stops where the time bound does: it walks
-- no more index entries than the same page bounded by id. The declaration
-- counts only while it holds for every row the snapshot sees.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never
LOAD 'alerts';

-- The rows of q with and without the node, and what the node did: whether
-- it ran, its window came from the time bound, and the entries it walked.
CREATE FUNCTION tw_run(q text, OUT same text, OUT node text, OUT walked int) LANGUAGE plpgsql AS $$
DECLARE
    got text[] := '{}';
    want text[] := '{}';
    v text;
    plan json;
BEGIN
    PERFORM set_config('alerts.custom_scan', 'on', true);
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
    WITH RECURSIVE t(p) AS (
        SELECT plan -> 0 -> 'Plan'
        UNION ALL
        SELECT c FROM t, json_array_elements(t.p -> 'Plans') c
    )
    SELECT CASE WHEN bool_or(t.p ->> 'Window From' IS NOT NULL) THEN 'node, window from the time bound'
                WHEN count(*) > 0 THEN 'node' ELSE 'no node' END,
           sum((t.p ->> 'Index Entries Walked')::int)
      INTO node, walked
    FROM t WHERE t.p ->> 'Custom Plan Provider' = 'AlertsSearch';
    FOR v IN EXECUTE q LOOP
        got := got || v;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'off', true);
    FOR v IN EXECUTE q LOOP
        want := want || v;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'on', true);
    same := format('%s rows, %s', cardinality(want),
                   CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END);
END $$;
CREATE FUNCTION tw_check(q text) RETURNS text LANGUAGE sql AS $$
    SELECT same || ', ' || node FROM tw_run(q)
$$;

-- The query suite's rows (ids made by alerts_ulid(created_at): the same
-- millisecond), with the recommended setup and the index a window wants.
CREATE TABLE tw (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id));
INSERT INTO tw SELECT * FROM alerts;
CALL alerts_enable('tw');
SELECT alerts_index_command('tw') \gexec
CREATE INDEX tw_created ON tw (organisation_id, created_at);
ANALYZE tw;

-- The windows: >=, >, BETWEEN, < and =, alone, with an id bound, relative
-- to a fixed time (now() is fixed in a transaction; these are fixed here).
CREATE TABLE tw_queries (n int, q text);
INSERT INTO tw_queries VALUES
 (1, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND created_at >= '2025-12-20' ORDER BY id DESC LIMIT 20$$),
 (2, $$SELECT id FROM tw WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"service": "S7"}' AND created_at > '2025-12-01' ORDER BY id DESC LIMIT 50$$),
 (3, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T0"}' AND created_at BETWEEN '2025-06-01' AND '2025-06-10' ORDER BY id DESC LIMIT 20$$),
 (4, $$SELECT id FROM tw WHERE organisation_id = 'ORG_C' AND attribute_values @> '{"team": "T0"}' AND created_at < '2025-03-01' ORDER BY id DESC LIMIT 20$$),
 (5, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T2"}' AND created_at >= '2025-11-01' AND id < alerts_ulid_floor('2025-11-15') ORDER BY id DESC LIMIT 20$$),
 (6, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND created_at >= '2025-12-25' AND created_at <= '2025-12-26' ORDER BY id ASC LIMIT 20$$),
 (7, $$SELECT id FROM tw WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"team": "T3"}' AND created_at = (SELECT created_at FROM tw WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"team": "T3"}' ORDER BY id DESC LIMIT 1 OFFSET 10) ORDER BY id DESC LIMIT 5$$),
 (8, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND alerts_attrs_match(attribute_values, '{"team": ["T1", "T2"]}') AND created_at >= '2025-12-28 12:00' ORDER BY id DESC LIMIT 20$$),
 (9, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND '2025-12-20' <= created_at ORDER BY id DESC LIMIT 20$$),
 (10, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND created_at >= 'infinity' ORDER BY id DESC LIMIT 20$$),
 (11, $$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND created_at <= '-infinity' ORDER BY id DESC LIMIT 20$$);

-- Undeclared: the time bound is only a filter; every page exact.
SELECT n, tw_check(q) FROM tw_queries ORDER BY n;

-- Undeclared, the node's direct walk tests the time bound too: a row
-- outside the window is dropped before it becomes a row of the page
-- (the executor's filter, which still tests it, removes none), and a page
-- that cannot fill ends the search instead of reading the tenant's history.
CREATE FUNCTION tw_removed(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
    RETURN (WITH RECURSIVE t(p) AS (
                SELECT plan -> 0 -> 'Plan'
                UNION ALL
                SELECT c FROM t, json_array_elements(t.p -> 'Plans') c)
            SELECT sum(coalesce((t.p ->> 'Rows Removed by Filter')::bigint, 0))
            FROM t WHERE t.p ->> 'Custom Plan Provider' = 'AlertsSearch');
END $$;
SELECT n, tw_removed(q) AS removed FROM tw_queries WHERE n IN (1, 2, 3, 4, 9) ORDER BY n;
-- Partitioned by id, one leaf made apart with its columns in another
-- order: the bound is tested at the leaf's own number for the column.
CREATE TABLE twm (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                  priority_id int NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id))
    PARTITION BY RANGE (id);
CREATE TABLE twm_old PARTITION OF twm FOR VALUES FROM (MINVALUE) TO (alerts_ulid_floor('2025-07-01'));
CREATE TABLE twm_new (dropped int, attribute_values jsonb NOT NULL DEFAULT '{}', priority_id int NOT NULL,
                      organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL, id text COLLATE "C" NOT NULL);
ALTER TABLE twm_new DROP COLUMN dropped;
ALTER TABLE twm ATTACH PARTITION twm_new FOR VALUES FROM (alerts_ulid_floor('2025-07-01')) TO (MAXVALUE);
INSERT INTO twm SELECT id, organisation_id, created_at, priority_id, attribute_values FROM alerts;
CALL alerts_enable('twm');
SELECT alerts_index_command('twm') \gexec
ANALYZE twm;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twm ')) AS twm FROM tw_queries ORDER BY n;
SELECT n, tw_removed(replace(q, 'FROM tw ', 'FROM twm ')) AS twm_removed FROM tw_queries WHERE n IN (1, 2, 3, 4) ORDER BY n;
SET alerts.search_direct_scan = off;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twm ')) AS twm_statements FROM tw_queries WHERE n IN (1, 3, 4) ORDER BY n;
RESET alerts.search_direct_scan;
DROP TABLE twm;

-- Declared, with a tolerance of one millisecond (the ids' own precision).
ALTER TABLE tw ADD CONSTRAINT tw_ids_follow_created_at
    CHECK (alerts_ulid_near(id, created_at, interval '1 millisecond'));
SELECT n, tw_check(q) FROM tw_queries ORDER BY n;

-- The window walks no more entries than the same page bounded by id
-- (the id bound a 1 ms tolerance implies).
SELECT (SELECT walked FROM tw_run($$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND created_at >= '2025-12-20' ORDER BY id DESC LIMIT 200$$))
    <= (SELECT walked FROM tw_run($$SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}' AND id >= alerts_ulid_floor('2025-12-19 23:59:59.999') ORDER BY id DESC LIMIT 200$$))
    AS walks_as_the_id_bound;

-- Through a prepared statement's generic plan (the bound a parameter).
SET plan_cache_mode = force_generic_plan;
PREPARE tw_page(timestamptz, int) AS
    SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
      AND created_at >= $1 ORDER BY id DESC LIMIT $2;
CREATE TEMP TABLE tw_got AS EXECUTE tw_page('2025-12-20', 20);
SET alerts.custom_scan = off;
SELECT array(SELECT id FROM tw_got ORDER BY id DESC)
     = array(SELECT id FROM tw WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
             AND created_at >= '2025-12-20' ORDER BY id DESC LIMIT 20) AS generic_plan_exact,
       (SELECT count(*) FROM tw_got) AS generic_rows;
RESET alerts.custom_scan;
CREATE FUNCTION tw_plan_has(q text, what text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    l text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || q LOOP
        IF l LIKE '%' || what || '%' THEN RETURN true; END IF;
    END LOOP;
    RETURN false;
END $$;
SELECT tw_plan_has('EXECUTE tw_page(''2025-12-20'', 20)', 'Window From') AS generic_plan_window_from,
       tw_plan_has('EXECUTE tw_page(''2025-12-20'', 20)', '$1') AS generic_plan_has_parameter;
DROP FUNCTION tw_plan_has(text, text);
RESET plan_cache_mode;

-- The declaration refuses rows it does not hold for: an id of another
-- time, a lowercase id, and a tolerance in months.
\set VERBOSITY terse
INSERT INTO tw (id, organisation_id, created_at, priority_id, attribute_values)
VALUES (alerts_ulid('2020-01-01'), 'ORG_A', '2025-12-31', 1, '{}');
INSERT INTO tw (id, organisation_id, created_at, priority_id, attribute_values)
VALUES (lower(alerts_ulid('2025-12-31')), 'ORG_A', '2025-12-31', 1, '{}');
SELECT alerts_ulid_near(alerts_ulid(), now(), interval '1 month');
SELECT alerts_ulid_near(alerts_ulid(), now(), interval '-1 second');
SELECT alerts_ulid_near(alerts_ulid(now()), now(), interval '1 second') AS near_now,
       alerts_ulid_near(alerts_ulid(now() - interval '1 hour'), now(), interval '1 second') AS hour_ago;
\set VERBOSITY default

-- The bound holds only for snapshots that see the constraint committed:
-- not in the transaction that adds it, not NOT VALID, not once dropped.
SELECT oid AS tw_constraint FROM pg_constraint WHERE conname = 'tw_ids_follow_created_at' \gset
SELECT alerts_ulid_bound('2025-12-20', interval '1 millisecond', false, :tw_constraint) = alerts_ulid_floor('2025-12-19 23:59:59.999') AS bound_committed;
BEGIN;
ALTER TABLE tw DROP CONSTRAINT tw_ids_follow_created_at;
ALTER TABLE tw ADD CONSTRAINT tw_ids_follow_created_at
    CHECK (alerts_ulid_near(id, created_at, interval '1 millisecond'));
SELECT oid AS tw_constraint_new FROM pg_constraint WHERE conname = 'tw_ids_follow_created_at' \gset
SELECT alerts_ulid_bound('2025-12-20', interval '1 millisecond', false, :tw_constraint_new) IS NULL AS no_bound_in_its_transaction;
SELECT tw_check(q) FROM tw_queries WHERE n = 1;
ROLLBACK;
ALTER TABLE tw DROP CONSTRAINT tw_ids_follow_created_at;
SELECT alerts_ulid_bound('2025-12-20', interval '1 millisecond', false, :tw_constraint) IS NULL AS no_bound_once_dropped;
ALTER TABLE tw ADD CONSTRAINT tw_ids_follow_created_at
    CHECK (alerts_ulid_near(id, created_at, interval '1 millisecond')) NOT VALID;
SELECT n, tw_check(q) FROM tw_queries WHERE n IN (1, 3) ORDER BY n;
ALTER TABLE tw VALIDATE CONSTRAINT tw_ids_follow_created_at;
SELECT n, tw_check(q) FROM tw_queries WHERE n IN (1, 3) ORDER BY n;

-- Partitioned by created_at, declared once on the parent: each partition
-- inherits it (and cannot drop it), whole-table and per-partition plans.
CREATE TABLE twp (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at),
    CONSTRAINT twp_ids_follow_created_at CHECK (alerts_ulid_near(id, created_at, interval '1 millisecond')))
    PARTITION BY RANGE (created_at);
CREATE TABLE twp_a PARTITION OF twp FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE twp_b PARTITION OF twp FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
CREATE TABLE twp_other PARTITION OF twp DEFAULT;
INSERT INTO twp SELECT * FROM alerts;
CALL alerts_enable('twp');
SELECT alerts_index_command('twp') \gexec
ANALYZE twp;
ALTER TABLE twp_b DROP CONSTRAINT twp_ids_follow_created_at;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twp ')) FROM tw_queries ORDER BY n;
SET alerts.custom_scan_partitioned = off;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twp ')) FROM tw_queries ORDER BY n;
RESET alerts.custom_scan_partitioned;

-- Partitioned by created_at into weeks, as pg_partman lays a table out
-- (no CHECK on id), declared once on the parent: a leaf whose weeks,
-- widened by the tolerance, lie outside the id window is not opened
-- (search/near.rs), for plain SQL bounded by id or created_at and for
-- alerts_search; every page equals Postgres' own plan and the plain
-- table's pages. The default partition has no time range: always read.
CREATE TABLE twd (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at),
    CHECK (alerts_ulid_near(id, created_at, interval '1 millisecond')))
    PARTITION BY RANGE (created_at);
DO $$ BEGIN
    FOR w IN 0..51 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF twd FOR VALUES FROM (%L) TO (%L)', 'twd_' || w,
                       timestamptz '2024-12-30' + w * interval '7 days', timestamptz '2025-01-06' + w * interval '7 days');
    END LOOP;
END $$;
CREATE TABLE twd_other PARTITION OF twd DEFAULT;
INSERT INTO twd SELECT * FROM alerts;
CALL alerts_enable('twd');
CREATE INDEX twd_page ON twd (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
ANALYZE twd;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twd ')) FROM tw_queries ORDER BY n;
-- the same windows as id bounds: Postgres cannot prune by them, the node can
SELECT n, tw_check(regexp_replace(replace(q, 'FROM tw ', 'FROM twd '),
                   'created_at (>=|>) (''[^'']+'')', 'id \1 alerts_ulid_floor(\2)')) FROM tw_queries
WHERE n IN (1, 2, 5, 8) ORDER BY n;
-- leaves skipped by their own copy of the declaration (locked, not
-- opened) / pruned by their time range from the parent's descriptor
-- (neither locked nor opened)
CREATE FUNCTION tw_skipped(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
    plan := plan -> 0 -> 'Plan' -> 'Plans' -> 0;
    RETURN coalesce(plan ->> 'Partitions Skipped By CHECK', '0') || ' skipped, '
        || coalesce(plan ->> 'Partitions Pruned By Time', '0') || ' pruned';
END $$;
-- 53 leaves: a window from 2025-12-20 opens its two weeks and the default
SELECT tw_skipped($$SELECT id FROM twd WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
                    AND id >= alerts_ulid_floor('2025-12-20') ORDER BY id DESC LIMIT 20$$) AS skipped_by_id,
       tw_skipped($$SELECT id FROM twd WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
                    AND id >= alerts_ulid_floor('2025-06-01') AND id < alerts_ulid_floor('2025-06-10')
                    ORDER BY id DESC LIMIT 20$$) AS skipped_between;
-- alerts_search: every page of the plain table's, through cursors
SELECT f, since, bool_and(a IS NOT DISTINCT FROM b) AS same, max(cardinality(a)) AS rows
FROM (VALUES ('{"team": "T1"}'), ('{"service": "S7"}'), ('{"team": "T0", "service": "S3"}'), ('{"team": "NONE"}')) fs(f),
     (VALUES (timestamptz '2025-12-20'), ('2025-06-01'), ('-infinity')) ws(since),
     LATERAL (SELECT array(SELECT id FROM alerts_search(NULL::tw, 'ORG_A', f::jsonb, since, NULL, 1000)) AS a,
                     array(SELECT id FROM alerts_search(NULL::twd, 'ORG_A', f::jsonb, since, NULL, 1000)) AS b) x
GROUP BY f, since ORDER BY f, since;
-- a leaf attached later carries the declaration (Postgres requires it)
-- and is pruned as the others are; one whose rows break it is refused
CREATE TABLE twd_2026 (LIKE twd INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO twd_2026 (id, organisation_id, created_at, priority_id, attribute_values)
    VALUES (alerts_ulid('2026-01-03'), 'ORG_A', '2026-01-03', 1, '{"team": "T1"}');
ALTER TABLE twd_2026 ADD CHECK (created_at >= '2026-01-01' AND created_at < '2026-02-01');
ALTER TABLE twd ATTACH PARTITION twd_2026 FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
CALL alerts_enable('twd_2026');
SELECT count(*) FROM twd WHERE id >= alerts_ulid_floor('2026-01-01');
SELECT tw_skipped($$SELECT id FROM twd WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
                    AND id >= alerts_ulid_floor('2026-01-02') ORDER BY id DESC LIMIT 20$$) AS skipped_after_attach;
-- in the transaction that attaches a leaf, its copy of the declaration is
-- not yet committed: nothing is pruned from the descriptor, and each leaf
-- is judged by its own copy (the new one is read)
BEGIN;
CREATE TABLE twd_2026_02 (LIKE twd INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
INSERT INTO twd_2026_02 (id, organisation_id, created_at, priority_id, attribute_values)
    VALUES (alerts_ulid('2026-02-03'), 'ORG_A', '2026-02-03', 1, '{"team": "T1"}');
ALTER TABLE twd ATTACH PARTITION twd_2026_02 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
SELECT tw_skipped($$SELECT id FROM twd WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"team": "T1"}'
                    AND id >= alerts_ulid_floor('2026-01-02') ORDER BY id DESC LIMIT 20$$) AS skipped_in_attaching_txn;
SELECT id = (SELECT id FROM twd_2026_02) AS newest_is_attached_in_txn
FROM alerts_search(NULL::twd, 'ORG_A', '{"team": "T1"}', '2026-01-02', NULL, 1);
ROLLBACK;
SELECT id = (SELECT id FROM twd_2026) AS newest_is_attached
FROM alerts_search(NULL::twd, 'ORG_A', '{"team": "T1"}', '2025-12-20', NULL, 1);
CREATE TABLE twd_bad (LIKE twd INCLUDING DEFAULTS);
INSERT INTO twd_bad (id, organisation_id, created_at, priority_id) VALUES (alerts_ulid('2020-01-01'), 'ORG_A', '2026-02-03', 1);
ALTER TABLE twd ATTACH PARTITION twd_bad FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
DROP FUNCTION tw_skipped(text);
DROP TABLE twd, twd_bad;

-- Ids that stray from their time by up to the tolerance (2 hours) in
-- leaves of an hour (forward in even hours, back in odd ones): each id
-- lies in the range of five leaves, an older leaf holds newer ids than the
-- one after it, and a leaf is
-- opened only once no leaf opened has a newer id than its top
-- (search/leaves.rs). Pages 1 and 2 (through the cursor) of alerts_search
-- and of plain SQL equal Postgres' own plan, for page sizes 1 to 400
-- (a second page where the first is full).
CREATE TABLE twj (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at),
    CHECK (alerts_ulid_near(id, created_at, interval '2 hours')))
    PARTITION BY RANGE (created_at);
DO $$ BEGIN
    FOR h IN 0..51 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF twj FOR VALUES FROM (%L) TO (%L)', 'twj_' || h,
                       timestamptz '2025-06-01' + h * interval '1 hour', timestamptz '2025-06-01' + (h + 1) * interval '1 hour');
    END LOOP;
END $$;
CREATE TABLE twj_other PARTITION OF twj DEFAULT;
INSERT INTO twj (id, organisation_id, created_at, priority_id, attribute_values)
SELECT alerts_ulid(t + (CASE WHEN extract(hour FROM t)::int % 2 = 0 THEN 1 ELSE -1 END) * ((g * 7919) % 7000) * interval '1 second'),
       'ORG_' || (g % 2), t, 1,
       jsonb_build_object('team', 'T' || (g % 3), 'service', 'S' || (g % 40))
FROM generate_series(1, 6000) g, LATERAL (SELECT timestamptz '2025-06-01' + g * interval '30 seconds') x(t);
CALL alerts_enable('twj');
CREATE INDEX twj_page ON twj (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
ANALYZE twj;
SET alerts.custom_scan = off;
CREATE TEMP TABLE twj_want AS
SELECT f, n, since, array(SELECT id FROM twj WHERE organisation_id = 'ORG_1' AND attribute_values @> f::jsonb
                          AND id >= alerts_ulid_floor(since) ORDER BY id DESC LIMIT 2 * n) AS want
FROM (VALUES ('{}'), ('{"team": "T1"}'), ('{"service": "S7"}'), ('{"team": "T2", "service": "S5"}'), ('{"team": "NONE"}')) fs(f),
     (VALUES (1), (7), (50), (400)) ns(n), (VALUES (timestamptz '2025-06-01'), ('2025-06-02 03:00')) ws(since);
RESET alerts.custom_scan;
SELECT f, bool_and(want[1:n] = array(SELECT id FROM alerts_search(NULL::twj, 'ORG_1', f::jsonb, since, NULL, n))
               AND (want[n] IS NULL OR want[n + 1:2 * n] = array(SELECT id FROM alerts_search(NULL::twj, 'ORG_1', f::jsonb, since, want[n], n)))
               AND want[1:n] = array(SELECT id FROM twj WHERE organisation_id = 'ORG_1' AND attribute_values @> f::jsonb
                                     AND id >= alerts_ulid_floor(since) ORDER BY id DESC LIMIT n)
               AND (want[n] IS NULL OR want[n + 1:2 * n] = array(SELECT id FROM twj WHERE organisation_id = 'ORG_1'
                                     AND attribute_values @> f::jsonb AND id >= alerts_ulid_floor(since) AND id < want[n]
                                     ORDER BY id DESC LIMIT n))) AS same,
       max(cardinality(want)) AS rows
FROM twj_want GROUP BY f ORDER BY f;
SELECT n, tw_check(format($$SELECT * FROM twj WHERE organisation_id = 'ORG_1' AND attribute_values @> '{"team": "T1"}'
                            AND created_at >= '2025-06-02' ORDER BY id DESC LIMIT %s$$, n)) FROM (VALUES (1), (60), (700)) v(n);
DROP TABLE twj;

-- Partitioned by created_at with nothing declared: a created_at bound
-- prunes Postgres' leaves, and no id window would prune the node's, so the
-- table is never searched whole (its leaves may each get the node): the
-- page is Postgres' own, and no slower than it (benches/window.py).
CREATE TABLE twu (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE TABLE twu_a PARTITION OF twu FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE twu_b PARTITION OF twu FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
CREATE TABLE twu_other PARTITION OF twu DEFAULT;
INSERT INTO twu SELECT * FROM alerts;
CALL alerts_enable('twu');
SELECT alerts_index_command('twu') \gexec
ANALYZE twu;
CREATE FUNCTION tw_whole(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO plan;
    RETURN plan::text LIKE '%"Partitions": "searched whole%';
END $$;
SELECT n, tw_check(replace(q, 'FROM tw ', 'FROM twu ')) AS page,
       tw_whole(replace(q, 'FROM tw ', 'FROM twu ')) AS searched_whole,
       tw_whole(replace(q, 'FROM tw ', 'FROM twp ')) AS searched_whole_declared
FROM tw_queries ORDER BY n;
DROP FUNCTION tw_whole(text);

DROP TABLE tw, twp, twu, tw_queries;
DROP FUNCTION tw_removed(text);
DROP FUNCTION tw_check(text);
DROP FUNCTION tw_run(text);
