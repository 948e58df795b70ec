-- CALL alerts_enable / alerts_rebuild / alerts_disable on an existing table
-- of 1M rows while a second session keeps inserting: the backfill commits in
-- batches, can be interrupted and resumed, blocks no insert for long, and
-- leaves every row with a correct bitmap.
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
-- Postgres' own plans for the oracles' plain SQL (the custom scan is
-- tested against them in plain.sql).
SET alerts.custom_scan = off;
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
\set SHOW_CONTEXT never
-- Autovacuum of the 1M-row table the backfills rewrite yields to a waiting
-- ALTER after deadlock_timeout: below the procedures' lock_timeout_ms, it
-- yields before the attempt times out, and no "table busy, retrying"
-- notice depends on timing.
SET deadlock_timeout = '100ms';
CREATE TABLE live (
    id text COLLATE "C" PRIMARY KEY,
    organisation_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    attribute_values jsonb
);
INSERT INTO live
SELECT alerts_ulid(timestamptz '2026-06-01' - g * interval '2 seconds'), 'org' || (g % 10), timestamptz '2026-06-01',
       CASE WHEN g % 1000 = 0 THEN NULL
            WHEN g % 997 = 0 THEN '{}'
            ELSE jsonb_build_object('env', 'e' || (g % 7), 'svc', 's' || (g % 101), 'n', g % 13, 'up', g % 2 = 0) END
FROM generate_series(1, 1000000) g;
ANALYZE live;

-- The writer: a second client process (tests/clients/enable_writer.sql, psql
-- in the background) inserting one row per transaction, its latency logged,
-- until told to stop.
CREATE TABLE writer_log (i int, started timestamptz, took interval);
CREATE TABLE writer_stop (stop boolean);
CREATE TABLE writer_done (done boolean);
CREATE TABLE phases (name text, at timestamptz);
\setenv PGDATABASE :DBNAME
\! psql -X -q -f tests/clients/enable_writer.sql >/dev/null 2>&1 &
DO $$ BEGIN  -- until the writer has written its first row
    FOR i IN 1..600 LOOP EXIT WHEN EXISTS (SELECT 1 FROM writer_log); PERFORM pg_sleep(0.05); END LOOP;
END $$;

-- Interrupted: statement_timeout stops the CALL part way; the batches
-- committed so far stay.
SET client_min_messages = warning;
SET statement_timeout = '1500ms';
\set VERBOSITY terse
CALL alerts_enable('live', batch_rows => 20000);
\set VERBOSITY default
RESET statement_timeout;
SELECT count(*) FILTER (WHERE attribute_values_bitmap IS NOT NULL) > 0 AS some_done,
       count(*) FILTER (WHERE attribute_values_bitmap IS NULL AND attribute_values IS NOT NULL) > 0 AS some_left
FROM live;

-- Resumed: the second CALL finishes what is left.
INSERT INTO phases VALUES ('resume', clock_timestamp());
CALL alerts_enable('live', batch_rows => 20000);
INSERT INTO phases VALUES ('done', clock_timestamp());
SELECT pg_sleep(0.2);
INSERT INTO writer_stop VALUES (true);
DO $$ BEGIN
    FOR i IN 1..600 LOOP EXIT WHEN EXISTS (SELECT 1 FROM writer_done); PERFORM pg_sleep(0.05); END LOOP;
END $$;
SELECT count(*) AS writer_finished FROM writer_done;
RESET client_min_messages;

-- The writer kept going during the backfill and no insert waited for long:
-- the longest insert took under a quarter of the resumed backfill (a single
-- transaction over the table would have blocked inserts for all of it).
WITH span AS (SELECT min(at) FILTER (WHERE name = 'resume') AS t0, max(at) FILTER (WHERE name = 'done') AS t1 FROM phases)
SELECT count(*) FILTER (WHERE started BETWEEN t0 AND t1) > 10 AS inserts_during_backfill,
       max(took) < (t1 - t0) / 4 AS no_insert_blocked_long
FROM writer_log, span
GROUP BY t0, t1;

-- Every row has the right bitmap: the writer's (by the trigger), the old ones
-- (by the backfill); NULL attributes keep a NULL bitmap.
SELECT count(*) > 1000000 AS all_rows_there,
       count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)) AS wrong_bitmaps,
       count(*) FILTER (WHERE attribute_values IS NULL AND attribute_values_bitmap IS NULL) AS null_attrs
FROM live;
SELECT advice FROM alerts_bloom_stats('live');
\d live

-- The fast-path index, created concurrently from the command the extension
-- gives, and searches through it equal the exact filter.
SELECT alerts_index_command('live');
SELECT alerts_index_command('live') \gexec
SELECT f AS filter,
       array(SELECT id FROM alerts_search(NULL::live, 'org3', f::jsonb, '-infinity', NULL, 200))
     = array(SELECT id FROM live WHERE organisation_id = 'org3' AND attribute_values @> f::jsonb ORDER BY id DESC LIMIT 200) AS exact
FROM unnest(ARRAY['{"env": "e3"}', '{"svc": "s17", "n": 4}', '{"up": true, "env": ["e1", "e2"]}', '{"writer": 5}', '{"env": "nope"}']) f;

-- Calling it again is a no-op; a rebuild finds nothing to fix, then fixes
-- bitmaps written behind the trigger's back. Progress is reported (numbers
-- masked here).
SET client_min_messages = warning;
CALL alerts_enable('live');
RESET client_min_messages;
ALTER TABLE live DISABLE TRIGGER alerts_bloom;
UPDATE live SET attribute_values = '{"env": "changed"}' WHERE id IN (SELECT id FROM live ORDER BY id LIMIT 5);
ALTER TABLE live ENABLE TRIGGER alerts_bloom;
SELECT rows_without_bitmap, stale_bitmaps, advice FROM alerts_bloom_stats('live');
\setenv PGDATABASE :DBNAME
\! psql -X -q -c "CALL alerts_rebuild('live')" 2>&1 | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' | sort -u
SELECT rows_without_bitmap, stale_bitmaps FROM alerts_bloom_stats('live');

-- Errors name the problem and the fix.
BEGIN;
CALL alerts_enable('live');
ROLLBACK;
CALL alerts_enable('nope');
CALL alerts_enable('live', 'attrs');
CALL alerts_enable('live', 'organisation_id');
CALL alerts_enable('live', bitmap_column => 'created_at');
CALL alerts_enable('live', form => 'materialized');
CALL alerts_enable('live', form => 'generated');
CALL alerts_enable('live', batch_rows => 0);
-- checked before anything changes: the trigger still fires on origin only
SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'live'::regclass AND tgname = 'alerts_bloom';
CALL alerts_enable('live', lock_timeout_ms => 0);
CALL alerts_enable('live_pkey');
CALL alerts_rebuild('live', bitmap_column => 'bm');
ALTER TABLE live DISABLE TRIGGER alerts_bloom;
CALL alerts_enable('live');
ALTER TABLE live ENABLE TRIGGER alerts_bloom;

-- Disable drops the trigger, the column and the index that contains it.
CALL alerts_disable('live');
\d live
CALL alerts_disable('live');
INSERT INTO live (id, organisation_id, attribute_values) VALUES (alerts_ulid(), 'org1', '{"after": "disable"}');

-- The generated-column form, on a small copy with other column names.
CREATE TABLE small (id text COLLATE "C" PRIMARY KEY, organisation_id text, attrs jsonb);
INSERT INTO small SELECT id, organisation_id, attribute_values FROM live ORDER BY id LIMIT 5000;
SET client_min_messages = warning;
CALL alerts_enable('small', 'attrs', 'bm', form => 'generated');
RESET client_min_messages;
\d small
INSERT INTO small VALUES (alerts_ulid(), 'org1', '{"env": "new"}');
SELECT count(*) FILTER (WHERE bm IS DISTINCT FROM alerts_bloom(attrs)) AS wrong_bitmaps FROM small;
CALL alerts_enable('small', 'attrs', 'bm');
SET client_min_messages = warning;
CALL alerts_rebuild('small', 'attrs', 'bm');
RESET client_min_messages;
CALL alerts_disable('small', 'bm');
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'small'::regclass AND attnum > 0 AND NOT attisdropped;
-- A narrower column (bits => 256): added at that width, kept current by the
-- trigger, checked and rebuilt at its width; an existing column keeps its
-- width, and asking for another is refused.
CREATE TABLE slim (id text COLLATE "C" PRIMARY KEY, organisation_id text, attribute_values jsonb);
INSERT INTO slim SELECT id, organisation_id, attrs FROM small ORDER BY id LIMIT 2000;
SET client_min_messages = warning;
CALL alerts_enable('slim', bits => 256);
RESET client_min_messages;
SELECT format_type(atttypid, atttypmod) AS bitmap_type FROM pg_attribute WHERE attrelid = 'slim'::regclass AND attname = 'attribute_values_bitmap';
INSERT INTO slim VALUES (alerts_ulid(), 'org1', '{"env": "slim"}');
SELECT count(*) AS rows, count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 256)) AS wrong_bitmaps FROM slim;
SELECT rows_without_bitmap, stale_bitmaps, round(bitmap_fill_mean::numeric, 2) > 0 AS filled, advice FROM alerts_bloom_stats('slim');
ALTER TABLE slim DISABLE TRIGGER alerts_bloom;
UPDATE slim SET attribute_values = '{"env": "changed"}' WHERE id = (SELECT min(id) FROM slim);
ALTER TABLE slim ENABLE TRIGGER alerts_bloom;
SELECT stale_bitmaps FROM alerts_bloom_stats('slim');
SET client_min_messages = warning;
CALL alerts_rebuild('slim');
CALL alerts_enable('slim');
RESET client_min_messages;
SELECT stale_bitmaps FROM alerts_bloom_stats('slim');
-- The trigger fires ALWAYS (alerts_enable makes it so): rows written in a
-- session with session_replication_role = replica (logical replication's
-- apply, loaders that skip triggers) get their bitmaps too. A trigger left
-- firing on origin only is named by alerts_bloom_stats; on one, such an
-- UPDATE keeps the old bitmap (the row would be missed by searches).
SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'slim'::regclass AND tgname = 'alerts_bloom';
SET session_replication_role = replica;
UPDATE slim SET attribute_values = '{"env": "replica"}' WHERE id = (SELECT max(id) FROM slim);
INSERT INTO slim VALUES (alerts_ulid(), 'org1', '{"env": "replica"}');
RESET session_replication_role;
SELECT count(*) AS rows, count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 256)) AS wrong_bitmaps FROM slim;
SELECT advice FROM alerts_bloom_stats('slim');
ALTER TABLE slim ENABLE TRIGGER alerts_bloom;
SELECT advice FROM alerts_bloom_stats('slim');
SET session_replication_role = replica;
UPDATE slim SET attribute_values = '{"env": "replica again"}' WHERE id = (SELECT max(id) FROM slim);
RESET session_replication_role;
SELECT stale_bitmaps FROM alerts_bloom_stats('slim');
-- (in a session of their own: their progress lines hold the run's rate
-- and time, blanked)
\! psql -X -q -v SHOW_CONTEXT=never -c "CALL alerts_enable('slim')" 2>&1 | sed -E 's/[0-9]+ rows\/s, [0-9.]+ s elapsed, about [0-9]+ s left/N rows\/s, N s elapsed, about N s left/; s/written in [0-9.]+ s/written in N s/'
\! psql -X -q -v SHOW_CONTEXT=never -c "CALL alerts_rebuild('slim')" 2>&1 | sed -E 's/[0-9]+ rows\/s, [0-9.]+ s elapsed, about [0-9]+ s left/N rows\/s, N s elapsed, about N s left/; s/written in [0-9.]+ s/written in N s/'
SELECT tgenabled, (SELECT stale_bitmaps FROM alerts_bloom_stats('slim')) FROM pg_trigger WHERE tgrelid = 'slim'::regclass AND tgname = 'alerts_bloom';
-- A BEFORE trigger that fires after the bitmap's (triggers fire in name
-- order) and changes the attributes leaves stale bitmaps: alerts_enable
-- warns with the fix, and renamed to fire last the bitmap trigger sees the
-- final attributes.
CREATE FUNCTION slim_lower() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.attribute_values := lower(NEW.attribute_values::text)::jsonb; RETURN NEW; END $$;
CREATE TRIGGER normalize BEFORE INSERT OR UPDATE ON slim FOR EACH ROW EXECUTE FUNCTION slim_lower();
SET client_min_messages = warning;
CALL alerts_enable('slim');
RESET client_min_messages;
INSERT INTO slim VALUES (alerts_ulid(), 'org1', '{"env": "UPPER"}');
SELECT count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 256)) AS stale FROM slim;
ALTER TRIGGER alerts_bloom ON slim RENAME TO zz_alerts_bloom;
SET client_min_messages = warning;
CALL alerts_rebuild('slim');
CALL alerts_enable('slim');
RESET client_min_messages;
INSERT INTO slim VALUES (alerts_ulid(), 'org1', '{"env": "UPPER AGAIN"}');
SELECT count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 256)) AS stale FROM slim;
DROP TRIGGER normalize ON slim;
DROP FUNCTION slim_lower();
CALL alerts_enable('slim', bits => 128);
CALL alerts_enable('slim', bits => 100);
SET client_min_messages = warning;
CALL alerts_enable('small', 'attrs', 'bm128', form => 'generated', bits => 128);
RESET client_min_messages;
SELECT format_type(atttypid, atttypmod) AS generated_type, pg_get_expr(d.adbin, d.adrelid) AS expression
FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = 'small'::regclass AND a.attname = 'bm128';
SELECT count(*) FILTER (WHERE bm128 IS DISTINCT FROM alerts_bloom(attrs, 128)) AS wrong_bitmaps FROM small;
DROP TABLE slim;
-- One width rule, the trigger's: alerts_column_bits reads it for each
-- column type, and alerts_enable accepts exactly the columns it names.
CREATE TABLE widths (id text COLLATE "C" PRIMARY KEY, organisation_id text, attribute_values jsonb,
                     a bit(512), b bit(256), c bit(128), d varbit, e varbit(1024), f varbit(256), g bit(100), h text);
SELECT c AS column_name, alerts_column_bits('widths', c) AS bits
FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'nope', 'ctid']::name[]) c;
SET client_min_messages = warning;
CALL alerts_enable('widths', bitmap_column => 'e');
RESET client_min_messages;
INSERT INTO widths (id, organisation_id, attribute_values) VALUES (alerts_ulid(), 'org1', '{"env": "wide"}');
SELECT e = alerts_bloom(attribute_values) AS varbit_1024_written, length(e) AS bits_written FROM widths;
CALL alerts_enable('widths', bitmap_column => 'f');
CALL alerts_enable('widths', bitmap_column => 'g');
DROP TABLE widths;
DROP TABLE live, small, writer_log, writer_stop, writer_done, phases;
