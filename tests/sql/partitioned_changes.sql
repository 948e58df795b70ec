-- Partitioned tables changing under searches, continuing partitioned.sql
-- (its tables p_time, p_id and p_two, in the same database): leaves
-- dropped, created, attached and detached while a second client pages
-- through them; a leaf attached after a plain query was planned; bad
-- layouts and calls; disabling through the parent.
SET client_min_messages = warning;
SET alerts.custom_scan = off;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never
-- Retention while searches run: a second client process
-- (tests/clients/partition_searcher.sql) pages through p_time and checks
-- every page against the exact filter in the same statement, committing
-- after each, while this session detaches and drops the oldest months
-- (once CONCURRENTLY) and attaches a new one.
CREATE TABLE searcher_log (at timestamptz DEFAULT clock_timestamp(), ok boolean, error text);
-- begun is bumped with each change of the partition set that does not
-- wait for running statements (in the transaction of an ATTACH, before a
-- DETACH CONCURRENTLY), settled once it has returned: a statement planned
-- before such a change commits reads the old partitions to its end, one
-- planned after it the new, and alerts_search, like any function that
-- runs SQL, reads the partitions as they are when it is called (a commit
-- is visible before its invalidation reaches other backends, so the call
-- may see a set its statement's plan does not). A check whose statement
-- overlapped such a change compares two different tables and is not
-- judged (the call's own consistency across an ATTACH is tested below,
-- with p_gate; the plain query's, with p_plan).
CREATE TABLE partition_changes (begun int, settled int);
INSERT INTO partition_changes VALUES (0, 0);
CREATE TABLE searcher_stop (stop boolean);
CREATE TABLE searcher_done (done boolean);
\setenv PGDATABASE :DBNAME
\! psql -X -q -f tests/clients/partition_searcher.sql >/dev/null 2>&1 &
DO $$ BEGIN
    FOR i IN 1..600 LOOP EXIT WHEN (SELECT count(*) FROM searcher_log) >= 5; PERFORM pg_sleep(0.05); END LOOP;
END $$;
UPDATE partition_changes SET begun = begun + 1;
ALTER TABLE p_time DETACH PARTITION archive CONCURRENTLY;
UPDATE partition_changes SET settled = begun;
DROP TABLE archive;
ALTER TABLE p_time DETACH PARTITION p_time_2025_01;
DROP TABLE p_time_2025_01;
CREATE TABLE p_time_2026_02 (LIKE p_time INCLUDING DEFAULTS);
INSERT INTO p_time_2026_02 (id, organisation_id, created_at, priority_id, attribute_values)
SELECT alerts_ulid(t), 'ORG_A', t, 1, jsonb_build_object('env', 'prod', 'month', 'feb')
FROM generate_series(1, 300) g, LATERAL (SELECT timestamptz '2026-02-01' + g * interval '1 hour' AS t) x;
BEGIN;
ALTER TABLE p_time ATTACH PARTITION p_time_2026_02 FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
UPDATE partition_changes SET begun = begun + 1;
COMMIT;
UPDATE partition_changes SET settled = begun;
CALL alerts_enable('p_time_2026_02');
UPDATE partition_changes SET begun = begun + 1;
ALTER TABLE p_time DETACH PARTITION p_time_2025_02 CONCURRENTLY;
UPDATE partition_changes SET settled = begun;
DROP TABLE p_time_2025_02;
DO $$
DECLARE
    seen bigint := (SELECT count(*) FROM searcher_log);
BEGIN  -- a few more searches after the last change
    FOR i IN 1..600 LOOP EXIT WHEN (SELECT count(*) FROM searcher_log) >= seen + 5; PERFORM pg_sleep(0.05); END LOOP;
END $$;
INSERT INTO searcher_stop VALUES (true);
DO $$ BEGIN
    FOR i IN 1..600 LOOP EXIT WHEN EXISTS (SELECT 1 FROM searcher_done); PERFORM pg_sleep(0.05); END LOOP;
END $$;
SELECT count(*) >= 10 AS searched, count(*) FILTER (WHERE NOT ok) AS wrong_pages,
       count(*) FILTER (WHERE ok AND error IS NOT NULL) AS errors, min(error) AS first_error
FROM searcher_log;
SELECT count(*) AS searcher_finished FROM searcher_done;

-- A partition attached while a call runs. ATTACH takes only SHARE UPDATE
-- EXCLUSIVE on the parent, so it may commit between two of the statements
-- a call runs; the page is then read again on the new partitions, never
-- half on each. A second client (tests/clients/gate_searcher.sql) searches
-- p_gate as a role under a policy whose check waits on an advisory lock
-- this session holds: its first chunk (1000 entries of p_gate_1, about 20
-- matches) waits while this session attaches p_gate_2, whose matches
-- interleave with p_gate_1's; the page must be the newest 50 of both.
-- Waits (30 s at most) until a statement waits on advisory lock k: how
-- many do; until table t has a row.
CREATE FUNCTION gate_waiters(k int) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1..600 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = k AND NOT granted);
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = k AND NOT granted);
END $$;
CREATE FUNCTION row_arrived(t regclass) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    arrived boolean;
BEGIN
    FOR i IN 1..600 LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', t) INTO arrived;
        EXIT WHEN arrived;
        PERFORM pg_sleep(0.05);
    END LOOP;
    RETURN arrived;
END $$;
CREATE TABLE p_gate (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, priority_id int NOT NULL,
                     attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id, priority_id)) PARTITION BY LIST (priority_id);
CREATE TABLE p_gate_1 PARTITION OF p_gate FOR VALUES IN (1);
CREATE TABLE p_gate_2 PARTITION OF p_gate FOR VALUES IN (2);
INSERT INTO p_gate SELECT alerts_ulid(timestamptz '2025-06-01' + g * interval '1 minute'), 'ORG_A', 1 + g % 2,
                          jsonb_build_object('env', CASE WHEN g % 25 = 0 THEN 'prod' ELSE 'dev' END)
FROM generate_series(1, 20000) g;
CALL alerts_enable('p_gate');
SELECT alerts_index_command('p_gate') \gexec
ALTER TABLE p_gate DETACH PARTITION p_gate_2;
CREATE FUNCTION gate_wait() RETURNS boolean LANGUAGE plpgsql VOLATILE AS
$$ BEGIN PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); RETURN true; END $$;
ALTER TABLE p_gate ENABLE ROW LEVEL SECURITY;
CREATE POLICY gate ON p_gate USING (gate_wait());
CREATE TABLE gate_result (page text[]);
CREATE ROLE regress_alerts_gate;
GRANT SELECT ON p_gate TO regress_alerts_gate;
GRANT INSERT ON gate_result TO regress_alerts_gate;
SELECT pg_advisory_lock(4242) IS NOT NULL AS gate_closed;
\! psql -X -q -f tests/clients/gate_searcher.sql >/dev/null 2>&1 &
SELECT gate_waiters(4242) AS searches_waiting;
ALTER TABLE p_gate ATTACH PARTITION p_gate_2 FOR VALUES IN (2);
SELECT pg_advisory_unlock(4242) AS gate_opened;
SELECT row_arrived('gate_result');
SELECT cardinality(r.page) AS page_rows,
       r.page = array(SELECT id FROM p_gate WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                      ORDER BY id DESC LIMIT 50) AS page_on_both_partitions,
       (SELECT count(*) FROM unnest(r.page) u(id) JOIN p_gate_2 USING (id)) AS from_attached
FROM gate_result r;
DROP TABLE p_gate, gate_result;
DROP FUNCTION gate_wait();
DROP ROLE regress_alerts_gate;

-- A partition attached after a plain query was planned, before its scan
-- read its first page: the node reads the partitions its plan read, as
-- the rest of Postgres' plan does. A second client
-- (tests/clients/plan_searcher.sql) runs one statement whose first
-- subquery waits on an advisory lock this session holds, the second is
-- the plain query (the node searching p_plan whole), the third the same
-- rows through Postgres' plan; this session attaches p_plan_2, whose rows
-- are the tenant's newest, while it waits.
CREATE TABLE p_plan (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, priority_id int NOT NULL,
                     attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id, priority_id)) PARTITION BY LIST (priority_id);
CREATE TABLE p_plan_1 PARTITION OF p_plan FOR VALUES IN (1);
CREATE TABLE p_plan_2 PARTITION OF p_plan FOR VALUES IN (2);
CREATE TABLE p_plan_3 PARTITION OF p_plan FOR VALUES IN (3);
INSERT INTO p_plan SELECT alerts_ulid(timestamptz '2025-06-01' + g * interval '1 minute'), 'ORG_A', CASE WHEN g > 1900 THEN 2 ELSE 1 + 2 * (g % 2) END,
                          jsonb_build_object('env', CASE WHEN g % 5 = 0 THEN 'prod' ELSE 'dev' END)
FROM generate_series(1, 2000) g;
CALL alerts_enable('p_plan');
SELECT alerts_index_command('p_plan') \gexec
ANALYZE p_plan;
ALTER TABLE p_plan DETACH PARTITION p_plan_2;
CREATE TABLE plan_result (plain text[], oracle text[]);
SET alerts.custom_scan = on;
EXPLAIN (COSTS OFF) SELECT id FROM p_plan WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 50;
SET alerts.custom_scan = off;
SELECT pg_advisory_lock(4243) IS NOT NULL AS gate_closed;
\! psql -X -q -f tests/clients/plan_searcher.sql >/dev/null 2>&1 &
SELECT gate_waiters(4243) AS statements_waiting;
ALTER TABLE p_plan ATTACH PARTITION p_plan_2 FOR VALUES IN (2);
SELECT pg_advisory_unlock(4243) AS gate_opened;
SELECT row_arrived('plan_result');
SELECT cardinality(plain) AS plain_rows, plain = oracle AS plain_reads_planned_partitions,
       (SELECT count(*) FROM unnest(plain) u(id) JOIN p_plan_2 USING (id)) AS from_attached
FROM plan_result;
DROP TABLE p_plan, plan_result;
DROP FUNCTION gate_waiters(int), row_arrived(regclass);

-- Bad layouts and calls, each refused before any change.
CREATE TABLE p_bad (id text NOT NULL, organisation_id text NOT NULL, attribute_values jsonb) PARTITION BY LIST (organisation_id);
CREATE TABLE p_bad_a PARTITION OF p_bad FOR VALUES IN ('a');
CREATE FOREIGN DATA WRAPPER alerts_test_fdw;
CREATE SERVER alerts_test_server FOREIGN DATA WRAPPER alerts_test_fdw;
CREATE FOREIGN TABLE p_bad_remote PARTITION OF p_bad FOR VALUES IN ('remote') SERVER alerts_test_server;
CALL alerts_enable('p_bad');
SELECT count(*) AS bitmap_columns FROM pg_attribute WHERE attrelid = 'p_bad'::regclass AND attname = 'attribute_values_bitmap';
DROP FOREIGN TABLE p_bad_remote;
CREATE ROLE regress_alerts_part_owner;
CREATE ROLE regress_alerts_part_other;
ALTER TABLE p_bad OWNER TO regress_alerts_part_owner;
ALTER TABLE p_bad_a OWNER TO regress_alerts_part_owner;
CREATE TABLE p_bad_b PARTITION OF p_bad FOR VALUES IN ('b');
ALTER TABLE p_bad_b OWNER TO regress_alerts_part_other;
GRANT SELECT, UPDATE ON p_bad_b TO regress_alerts_part_owner;
SET ROLE regress_alerts_part_owner;
CALL alerts_enable('p_bad');
RESET ROLE;
SELECT count(*) AS bitmap_columns FROM pg_attribute WHERE attrelid = 'p_bad'::regclass AND attname = 'attribute_values_bitmap';
ALTER TABLE p_bad_b OWNER TO regress_alerts_part_owner;
SET ROLE regress_alerts_part_owner;
CALL alerts_enable('p_bad');
RESET ROLE;
-- Disabling goes through the parent, which drops the column and trigger of
-- every partition.
CALL alerts_disable('p_bad_a');
CALL alerts_disable('p_bad');
SELECT count(*) AS bitmap_columns_left FROM pg_partition_tree('p_bad') t JOIN pg_attribute a ON a.attrelid = t.relid
WHERE a.attname = 'attribute_values_bitmap' AND NOT a.attisdropped;
DROP TABLE p_bad;
DROP ROLE regress_alerts_part_owner, regress_alerts_part_other;
DROP SERVER alerts_test_server;
DROP FOREIGN DATA WRAPPER alerts_test_fdw;
DROP TABLE p_time, p_id, p_two, searcher_log, searcher_stop, searcher_done, partition_changes, index_reads;
DROP FUNCTION part_differential(regclass, text, int, jsonb, text);
