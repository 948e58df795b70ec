-- Soundness under DDL and unusual tables (issue 39): each case is a bug
-- found in 0.3.0, reproduced here through SQL as a user would meet it.
-- Every search is compared with the exact answer of the same table read
-- by plain SQL (whole rows as text, so that a row of another table, or one
-- read with another table's layout, shows).
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never

-- 'same', or what differs. Whole rows, newest first, page of 30; the
-- exact answer from Postgres' own plan.
CREATE FUNCTION snd_diff(t text, org text, f jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE got text[]; want text[];
BEGIN
  EXECUTE format('SELECT array(SELECT r::text FROM alerts_search(NULL::%s, $1, $2, ''-infinity'', NULL, 30) r)', t)
    INTO got USING org, f;
  PERFORM set_config('alerts.custom_scan', 'off', true);
  EXECUTE format('SELECT array(SELECT r::text FROM %s r WHERE organisation_id = $1 AND alerts_attrs_match(attribute_values, $2)
                  ORDER BY id DESC LIMIT 30)', t) INTO want USING org, f;
  PERFORM set_config('alerts.custom_scan', 'on', true);
  RETURN CASE WHEN got = want THEN format('same (%s rows)', cardinality(got))
              ELSE format('DIFFERENT: got %s, want %s', got[1:2], want[1:2]) END;
END $$;
-- The same for plain SQL through the custom scan (when the planner takes
-- it) against Postgres' own plan: the ids, and whether the node was used.
CREATE FUNCTION snd_plain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE got text[]; want text[]; line text; used int := 0;
BEGIN
  PERFORM set_config('alerts.custom_scan', 'on', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%AlertsSearch%' THEN used := used + 1; END IF;
  END LOOP;
  EXECUTE format('SELECT array(SELECT id FROM (%s) s)', q) INTO got;
  PERFORM set_config('alerts.custom_scan', 'off', true);
  EXECUTE format('SELECT array(SELECT id FROM (%s) s)', q) INTO want;
  PERFORM set_config('alerts.custom_scan', 'on', true);
  RETURN format('%s node(s); %s', used,
                CASE WHEN got = want THEN format('same (%s rows, %s distinct)', cardinality(got),
                                                 (SELECT count(DISTINCT x) FROM unnest(got) x))
                     ELSE format('DIFFERENT: %s rows, want %s', cardinality(got), cardinality(want)) END);
END $$;
LOAD 'alerts';

-- 1. Two tables swap names in a session that searched them: the kept
-- statements name the table, and Postgres resolves the name again when it
-- replans. Different layouts, so that reading one with the other's
-- descriptor shows (or crashes).
CREATE TABLE snd_a1 (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL,
                     attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TABLE snd_a2 (note text, n int, id text COLLATE "C" PRIMARY KEY, extra jsonb, organisation_id text NOT NULL,
                     attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_a1 FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_a2 FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_a1 (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX ON snd_a2 (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO snd_a1 (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'o' || (g % 2), jsonb_build_object('env', 'e' || (g % 3))
FROM generate_series(1, 400) g;
INSERT INTO snd_a2 (note, n, id, extra, organisation_id, attribute_values)
SELECT 'note ' || g, g, alerts_ulid(timestamptz '2026-02-01' + g * interval '1 minute'), '{"x": 1}', 'o' || (g % 2),
       jsonb_build_object('env', 'e' || (g % 3))
FROM generate_series(1, 300) g;
ANALYZE snd_a1, snd_a2;
-- Searched on every walker: the statement walk, then the direct one.
SET alerts.search_direct_scan = off;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}'), snd_diff('snd_a2', 'o1', '{"env": "e1"}');
SET alerts.search_direct_scan = on;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}'), snd_diff('snd_a2', 'o1', '{"env": "e1"}');
BEGIN;
ALTER TABLE snd_a1 RENAME TO snd_tmp;
ALTER TABLE snd_a2 RENAME TO snd_a1;
ALTER TABLE snd_tmp RENAME TO snd_a2;
COMMIT;
SET alerts.search_direct_scan = off;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}'), snd_diff('snd_a2', 'o1', '{"env": "e1"}');
SELECT snd_diff('snd_a2', 'o0', '{"env": "e2"}'), snd_diff('snd_a1', 'o0', '{}');
SET alerts.search_direct_scan = on;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}'), snd_diff('snd_a2', 'o1', '{"env": "e1"}');
-- A schema renamed: the tables in it change names without a relcache
-- invalidation of their own.
CREATE SCHEMA snd_s1;
CREATE SCHEMA snd_s2;
CREATE TABLE snd_s1.t (LIKE snd_a1 INCLUDING ALL);
CREATE TABLE snd_s2.t (LIKE snd_a2 INCLUDING ALL);
INSERT INTO snd_s1.t SELECT * FROM snd_a1;
INSERT INTO snd_s2.t SELECT * FROM snd_a2;
SET alerts.search_direct_scan = off;
SELECT snd_diff('snd_s1.t', 'o1', '{"env": "e1"}'), snd_diff('snd_s2.t', 'o1', '{"env": "e1"}');
BEGIN;
ALTER SCHEMA snd_s1 RENAME TO snd_tmp;
ALTER SCHEMA snd_s2 RENAME TO snd_s1;
ALTER SCHEMA snd_tmp RENAME TO snd_s2;
COMMIT;
SELECT snd_diff('snd_s1.t', 'o1', '{"env": "e1"}'), snd_diff('snd_s2.t', 'o1', '{"env": "e1"}');
SET alerts.search_direct_scan = on;
-- A column added with a default and one dropped: the statements are
-- planned again, the rows come in the new row type, and the rows stored
-- before the column was added carry its default (the direct walk returned
-- them with NULL there: a row stored before ADD COLUMN ... DEFAULT has
-- fewer columns than the table, and its default is in the catalog).
ALTER TABLE snd_a1 ADD COLUMN later int DEFAULT 7;
ALTER TABLE snd_a1 DROP COLUMN note;
SET alerts.search_direct_scan = off;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}');
SET alerts.search_direct_scan = on;
SELECT snd_diff('snd_a1', 'o1', '{"env": "e1"}');

-- 2. Classic inheritance: a parent with the trigger and indexes, two
-- children with theirs. alerts_search on the parent reads the children as
-- SELECT does; plain SQL on the parent gets the node on each child, not on
-- the parent's own rows (a search of the parent would read the children a
-- second time); ONLY the parent is Postgres' own plan.
CREATE TABLE snd_p (id text COLLATE "C" NOT NULL, organisation_id text NOT NULL,
                    attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TABLE snd_c1 () INHERITS (snd_p);
CREATE TABLE snd_c2 () INHERITS (snd_p);
CREATE TABLE snd_lone (LIKE snd_p);
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['snd_p', 'snd_c1', 'snd_c2', 'snd_lone'] LOOP
    EXECUTE format('CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger()', t);
    EXECUTE format('CREATE INDEX ON %I (organisation_id, id DESC) INCLUDE (attribute_values_bitmap)', t);
    EXECUTE format('CREATE INDEX ON %I USING gin (attribute_values)', t);
    EXECUTE format('CREATE UNIQUE INDEX ON %I (id)', t);
  END LOOP;
END $$;
-- teams t0-t5 common in each table, t6 rare (one row in 700)
INSERT INTO snd_p (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'o1',
       jsonb_build_object('team', CASE WHEN g % 700 = 0 THEN 't6' ELSE 't' || (g % 4) END)
FROM generate_series(1, 3000) g;
INSERT INTO snd_c1 (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute' + interval '10 seconds'), 'o1',
       jsonb_build_object('team', CASE WHEN g % 700 = 1 THEN 't6' ELSE 't' || (g % 5) END)
FROM generate_series(1, 3000) g;
INSERT INTO snd_c2 (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute' + interval '20 seconds'), 'o1',
       jsonb_build_object('team', CASE WHEN g % 700 = 2 THEN 't6' ELSE 't' || (g % 6) END)
FROM generate_series(1, 3000) g;
INSERT INTO snd_lone SELECT * FROM snd_p;
ANALYZE snd_p, snd_c1, snd_c2, snd_lone;
SELECT snd_diff('snd_p', 'o1', '{"team": "t1"}') AS parent, snd_diff('snd_c1', 'o1', '{"team": "t1"}') AS child,
       snd_diff('snd_lone', 'o1', '{"team": "t1"}') AS lone;
SET alerts.search_direct_scan = off;
SELECT snd_diff('snd_p', 'o1', '{"team": "t1"}') AS parent_statements;
SET alerts.search_direct_scan = on;
SELECT snd_plain($$SELECT id FROM snd_p WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 50$$) AS parent,
       snd_plain($$SELECT id FROM ONLY snd_p WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 50$$) AS only_parent;
SELECT snd_plain($$SELECT id FROM snd_c1 WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 50$$) AS child,
       snd_plain($$SELECT id FROM snd_lone WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 50$$) AS lone;
-- the rare route (GIN) on the parent, from its children's nodes: every
-- row of the filter, once (the parent's node read them all a second time)
SELECT snd_plain($$SELECT id FROM snd_p WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t6"}' ORDER BY id DESC LIMIT 14$$) AS parent_rare;

-- 3. A table of another access method (here the heap's handler under
-- another name): the direct walk and the node read through the heap's own
-- functions, so neither is used; alerts_search takes the statements.
CREATE ACCESS METHOD snd_heap2 TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE snd_am (LIKE snd_lone) USING snd_heap2;
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_am FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_am (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO snd_am SELECT * FROM snd_lone;
ANALYZE snd_am;
SELECT snd_diff('snd_am', 'o1', '{"team": "t1"}') AS other_am;
SELECT snd_plain($$SELECT id FROM snd_am WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 50$$) AS other_am;

-- 4. A pagination index of text_pattern_ops (byte order) on an id of a
-- collation that orders otherwise (ICU's root locale: 'a' < 'B'; bytes:
-- 'B' < 'a'): not an index ORDER BY id can use, so neither the walk nor the
-- node reads it. alerts_search says what index it needs; plain SQL gets
-- Postgres' plan. Where the server has no ICU, the same answers are
-- printed from the same checks on a C-collation id.
SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'und-x-icu') AS has_icu \gset
\if :has_icu
CREATE TABLE snd_pat (id text COLLATE "und-x-icu" NOT NULL, organisation_id text NOT NULL,
                      attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
\else
CREATE TABLE snd_pat (id text COLLATE "C" NOT NULL, organisation_id text NOT NULL,
                      attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
\endif
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_pat FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX snd_pat_page ON snd_pat (organisation_id, id text_pattern_ops DESC) INCLUDE (attribute_values_bitmap);
-- ids that sort differently by bytes and by the collation
INSERT INTO snd_pat (id, organisation_id, attribute_values)
SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'B' END || lpad(g::text, 4, '0'), 'o1', '{"env": "x"}'
FROM generate_series(1, 200) g;
ANALYZE snd_pat;
SELECT * FROM alerts_search(NULL::snd_pat, 'o1', '{"env": "x"}', '-infinity', NULL, 5);
SELECT snd_plain($$SELECT id FROM snd_pat WHERE organisation_id = 'o1' AND attribute_values @> '{"env": "x"}' ORDER BY id DESC LIMIT 20$$) AS pattern_ops;
-- with an index of text_ops beside it, both read the right one
CREATE INDEX snd_pat_page2 ON snd_pat (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
SELECT snd_diff('snd_pat', 'o1', '{"env": "x"}') AS text_ops;
SELECT snd_plain($$SELECT id FROM snd_pat WHERE organisation_id = 'o1' AND attribute_values @> '{"env": "x"}' ORDER BY id DESC LIMIT 20$$) AS text_ops;

-- 5. A function named alerts_keys in another schema, indexed as the
-- tenant keys would be: its keys are not the extension's, and its index
-- is not read as theirs (it would return an empty page here).
CREATE SCHEMA snd_evil;
CREATE FUNCTION snd_evil.alerts_keys(text, text, jsonb) RETURNS bigint[] IMMUTABLE LANGUAGE plpgsql AS
$$ BEGIN RETURN ARRAY[1::bigint]; END $$;
CREATE TABLE snd_k (LIKE snd_lone);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_k FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_k (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX snd_k_keys ON snd_k USING gin (snd_evil.alerts_keys(organisation_id, id, attribute_values));
INSERT INTO snd_k (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '10 seconds'), 'o1',
       jsonb_build_object('team', CASE WHEN g % 2000 = 0 THEN 'rare' ELSE 't' || (g % 3) END)
FROM generate_series(1, 12000) g;
ANALYZE snd_k;
-- the rare filter, then again (the second call takes the remembered route)
SELECT snd_diff('snd_k', 'o1', '{"team": "rare"}') AS first, snd_diff('snd_k', 'o1', '{"team": "rare"}') AS again;
SELECT snd_plain($$SELECT id FROM snd_k WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "rare"}' ORDER BY id DESC LIMIT 50$$) AS rare;
-- the extension's own keys index is read
CREATE INDEX snd_k_ours ON snd_k USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT snd_diff('snd_k', 'o1', '{"team": "rare"}') AS ours;

-- 6. A search inside a search: a row-level security policy whose function
-- searches another table. The outer search takes the statements (policies
-- are in force), and each of its rows runs the inner search. A search's
-- statements run with search_path pinned to pg_catalog, pg_temp, and so
-- do the policy functions they call: the function names its objects.
CREATE TABLE snd_n1 (LIKE snd_lone);
CREATE TABLE snd_n2 (LIKE snd_lone);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_n1 FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_n2 FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_n1 (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX ON snd_n2 (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO snd_n1 SELECT * FROM snd_lone;
INSERT INTO snd_n2 (id, organisation_id, attribute_values) VALUES
  (alerts_ulid(timestamptz '2026-01-01'), 'o1', '{"team": "t1"}'), (alerts_ulid(timestamptz '2026-01-02'), 'o1', '{"team": "t2"}');
-- whether tenant org has an alert of team t in snd_n2, by a search
CREATE FUNCTION snd_team_seen(org text, t text) RETURNS boolean STABLE LANGUAGE sql AS
$$ SELECT EXISTS (SELECT FROM public.alerts_search(NULL::public.snd_n2, org, pg_catalog.jsonb_build_object('team', t), '-infinity', NULL, 1)) $$;
ALTER TABLE snd_n1 ENABLE ROW LEVEL SECURITY;
CREATE POLICY snd_seen ON snd_n1 USING (snd_team_seen(organisation_id, attribute_values->>'team'));
DO $$ BEGIN CREATE ROLE snd_reader; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
GRANT SELECT ON snd_n1, snd_n2 TO snd_reader;
GRANT USAGE ON SCHEMA public TO snd_reader;
SET ROLE snd_reader;
SELECT count(*) AS nested_rows, count(*) FILTER (WHERE attribute_values->>'team' NOT IN ('t1', 't2')) AS wrong
FROM alerts_search(NULL::snd_n1, 'o1', '{}', '-infinity', NULL, 1000);
SELECT array(SELECT id FROM alerts_search(NULL::snd_n1, 'o1', '{"team": ["t1", "t2"]}', '-infinity', NULL, 1000))
     = array(SELECT id FROM snd_n1 WHERE organisation_id = 'o1' ORDER BY id DESC LIMIT 1000) AS nested_exact;
RESET ROLE;

-- 7. Errors while the node computes its values (an unset setting, a
-- parameter that is not JSON, a window after the last ULID): a clean
-- ERROR each time, and the session goes on.
\set VERBOSITY terse
SELECT id FROM snd_lone WHERE organisation_id = current_setting('snd.org') AND attribute_values @> '{"team": "t1"}'
ORDER BY id DESC LIMIT 5;
SET plan_cache_mode = force_generic_plan;
PREPARE snd_q(text, text) AS SELECT id FROM snd_lone WHERE organisation_id = $1 AND attribute_values @> $2::jsonb
ORDER BY id DESC LIMIT 5;
EXECUTE snd_q('o1', '{not json');
PREPARE snd_r(text, timestamptz) AS SELECT id FROM snd_lone WHERE organisation_id = $1 AND attribute_values @> '{"team": "t1"}'
  AND id >= alerts_ulid_floor($2) ORDER BY id DESC LIMIT 5;
EXECUTE snd_r('o1', 'infinity');
PREPARE snd_c(text, text) AS SELECT count(*) FROM (SELECT id FROM snd_lone WHERE organisation_id = $1 AND attribute_values @> $2::jsonb
ORDER BY id DESC LIMIT 5) s;
EXECUTE snd_c('o1', '{"team": "t1"}');
RESET plan_cache_mode;
\set VERBOSITY default
SELECT snd_plain($$SELECT id FROM snd_lone WHERE organisation_id = 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 5$$) AS after_errors;

-- 8. Plain SQL planned under a search_path whose first schema has its
-- own operators: the planner hook's catalog reads run with the path
-- pinned, as a search's statements do (none of these is ever called).
CREATE SCHEMA snd_hostile;
CREATE FUNCTION snd_hostile.eq(name, name) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hostile = called'; END $$;
CREATE OPERATOR snd_hostile.= (LEFTARG = name, RIGHTARG = name, FUNCTION = snd_hostile.eq);
CREATE FUNCTION snd_hostile.eq(oid, oid) RETURNS boolean LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'hostile = called'; END $$;
CREATE OPERATOR snd_hostile.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = snd_hostile.eq);
SET search_path = snd_hostile, public, pg_catalog;
SELECT snd_plain($$SELECT id FROM snd_k WHERE organisation_id OPERATOR(pg_catalog.=) 'o1' AND attribute_values @> '{"team": "t1"}' ORDER BY id DESC LIMIT 5$$) AS hostile_path;
RESET search_path;

-- 9. Statements are prepared on first use and kept once prepared: one
-- that fails to prepare (the attributes are json, which the exact check
-- does not take: the statement walk's first statement fails) is not kept
-- for the session, and neither is anything else, the second call failing
-- the same way. Kept statements show as plan contexts naming the probe; a
-- table searched before has some. An id that is "char" has no text-ordered
-- pagination index: the call says so before any statement.
CREATE TABLE snd_ch (id "char" NOT NULL, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                     attribute_values_bitmap bit(512));
CREATE INDEX ON snd_ch (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE TABLE snd_js (id text NOT NULL, organisation_id text NOT NULL, attribute_values json NOT NULL,
                     attribute_values_bitmap bit(512));
CREATE INDEX ON snd_js (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE FUNCTION snd_kept() RETURNS bigint LANGUAGE sql AS
$$ SELECT count(*) FROM pg_backend_memory_contexts WHERE ident LIKE '%alerts_search_probe%' $$;
SELECT snd_kept() > 0 AS searched_tables_keep_statements;
CREATE TEMP TABLE snd_before AS SELECT snd_kept() AS n;
\set VERBOSITY terse
SELECT * FROM alerts_search(NULL::snd_ch, 'o1', '{}', '-infinity', NULL, 5);
SELECT * FROM alerts_search(NULL::snd_js, 'o1', '{}', '-infinity', NULL, 5);
SELECT * FROM alerts_search(NULL::snd_js, 'o1', '{}', '-infinity', NULL, 5);
\set VERBOSITY default
SELECT snd_kept() - n AS kept_by_failed_prepares FROM snd_before;

-- 10. Plain SQL's `@>` through the custom scan, needles and rows of every
-- shape: the search reads by the filter `@>` implies, which is wider (a
-- row whose value is an array holding the needle passes it, not `@>`;
-- nested values, nulls and empty arrays are left out of it), and the
-- executor's test of `@>` on each row makes the page exact. As literals,
-- and as the parameter of one generic plan with values of every shape.
CREATE TABLE snd_c (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL,
                    attribute_values jsonb, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_c FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_c (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO snd_c (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + (g * 20 + k) * interval '1 minute'), 'o', v
FROM generate_series(1, 12) g,
     unnest(ARRAY['{"a": "x"}', '{"a": ["x"]}', '{"a": ["x", "y"]}', '{"a": 1}', '{"a": 1.0}', '{"a": [1]}',
                  '{"a": "1"}', '{"a": true}', '{"a": "true"}', '{"a": {"b": "x"}}', '{"a": null}',
                  '{"a": "x", "b": 2}', '{"b": "x"}', '{}', '{"a": "X"}', '{"a": "x ", "b": [2, 3]}',
                  '{"a": 1e0, "b": 2.00}', NULL]::jsonb[]) WITH ORDINALITY AS t(v, k);
ANALYZE snd_c;
CREATE TEMP TABLE snd_needles (n jsonb);
INSERT INTO snd_needles VALUES ('{"a": "x"}'), ('{"a": ["x"]}'), ('{"a": 1}'), ('{"a": 1.00}'), ('{"a": [1]}'),
  ('{"a": "1"}'), ('{"a": true}'), ('{"a": "true"}'), ('{"a": {"b": "x"}}'), ('{"a": null}'), ('{"a": "x", "b": 2}'),
  ('{"b": 2}'), ('{}'), ('{"a": []}'), ('{"a": "x", "b": [2]}'), ('{"b": 2.0, "a": 1}'), ('["x"]'), ('"x"'),
  ('{"a": "X"}'), ('{"a": ["x", "y"]}'), ('{"a": "x "}');
SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_sort = off;
SELECT n, snd_plain(format($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> %L ORDER BY id DESC LIMIT 100$$, n)) AS literal
FROM snd_needles ORDER BY n::text;
-- two containments, one of them an array
SELECT snd_plain($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> '{"a": "x"}'
                   AND attribute_values @> '{"b": [2]}' ORDER BY id DESC LIMIT 100$$) AS mixed;
SELECT snd_plain($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> '{"a": 1}'
                   AND attribute_values @> '{"a": 1.0, "b": 2}' ORDER BY id DESC LIMIT 100$$) AS both_scalar;
-- a containment and alerts_attrs_match on one key, in either order (the
-- node tests a string itself only where the filter's clause is it alone)
SELECT snd_plain($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND alerts_attrs_match(attribute_values, '{"a": ["x", "y"]}')
                   AND attribute_values @> '{"a": "x"}' ORDER BY id DESC LIMIT 100$$) AS match_first,
       snd_plain($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> '{"a": "x"}'
                   AND alerts_attrs_match(attribute_values, '{"a": "x"}') ORDER BY id DESC LIMIT 100$$) AS contains_first;
-- the rows whose "a" is an array holding "x", which the search's filter
-- accepts and the containment does not: the direct walk's exact check
-- refuses them (among the bloom's false positives); a statement walk's
-- rows are tested by the node, which removes them (EXPLAIN ANALYZE's
-- lines of it: its row counts read differently in 18)
CREATE FUNCTION snd_removed(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ 'Attribute Filter|Rechecked|False Positives' THEN RETURN NEXT trim(line); END IF;
  END LOOP;
END $$;
SELECT snd_removed($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> '{"a": "x"}' ORDER BY id DESC LIMIT 100$$);
SET alerts.search_direct_scan = off;
SELECT snd_removed($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> '{"a": "x"}' ORDER BY id DESC LIMIT 100$$);
RESET alerts.search_direct_scan;
-- alerts_attrs_match alone, which the node tests itself too: rows whose
-- "a" is an array holding the value pass it (none removed, none refused),
-- in both walks; every filter it accepts against Postgres' own plan
SELECT snd_removed($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND alerts_attrs_match(attribute_values, '{"a": "x"}') ORDER BY id DESC LIMIT 100$$);
SET alerts.search_direct_scan = off;
SELECT snd_removed($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND alerts_attrs_match(attribute_values, '{"a": "x"}') ORDER BY id DESC LIMIT 100$$);
RESET alerts.search_direct_scan;
SELECT n, snd_plain(format($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND alerts_attrs_match(attribute_values, %L) ORDER BY id DESC LIMIT 100$$, n)) AS filter
FROM snd_needles WHERE jsonb_typeof(n) = 'object' AND n::text NOT LIKE '%null%' ORDER BY n::text;
-- two filters on one key: the second is not in the search's filter as
-- written, so the node tests it
SELECT snd_plain($$SELECT id FROM snd_c WHERE organisation_id = 'o' AND alerts_attrs_match(attribute_values, '{"a": ["x", "y"]}')
                   AND alerts_attrs_match(attribute_values, '{"a": "y"}') ORDER BY id DESC LIMIT 100$$) AS two_filters;
-- the same rows in a table partitioned by id, read whole by one node
CREATE TABLE snd_cq (id text COLLATE "C" NOT NULL, organisation_id text NOT NULL,
                     attribute_values jsonb, attribute_values_bitmap bit(512)) PARTITION BY RANGE (id);
CREATE TABLE snd_cq1 PARTITION OF snd_cq FOR VALUES FROM (MINVALUE) TO (alerts_ulid_floor('2026-01-01 02:00+00'));
CREATE TABLE snd_cq2 PARTITION OF snd_cq FOR VALUES FROM (alerts_ulid_floor('2026-01-01 02:00+00')) TO (MAXVALUE);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON snd_cq FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON snd_cq (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO snd_cq SELECT * FROM snd_c;
ANALYZE snd_cq;
SELECT n, snd_plain(format($$SELECT id FROM snd_cq WHERE organisation_id = 'o' AND attribute_values @> %L ORDER BY id DESC LIMIT 100$$, n)) AS partitioned
FROM snd_needles ORDER BY n::text;
SET plan_cache_mode = force_generic_plan;
PREPARE snd_cp(jsonb) AS
  SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> $1 ORDER BY id DESC LIMIT 100;
CREATE FUNCTION snd_param() RETURNS TABLE (n jsonb, same boolean) LANGUAGE plpgsql AS $$
DECLARE got text[]; want text[]; r text;
BEGIN
  FOR n IN SELECT s.n FROM snd_needles s ORDER BY s.n::text LOOP
    got := '{}';
    FOR r IN EXECUTE format('EXECUTE snd_cp(%L)', n) LOOP  -- one plan, values alternating in shape
      got := got || r;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'off', true);
    SELECT array(SELECT id FROM snd_c WHERE organisation_id = 'o' AND attribute_values @> n ORDER BY id DESC LIMIT 100) INTO want;
    PERFORM set_config('alerts.custom_scan', 'on', true);
    same := got = want;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT count(*) AS needles, count(*) FILTER (WHERE same) AS same, array_agg(n) FILTER (WHERE NOT same) AS differ FROM snd_param();
EXPLAIN (COSTS OFF) EXECUTE snd_cp('{"a": "x"}');
RESET plan_cache_mode;
DEALLOCATE snd_cp;
RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_sort;

DROP TABLE snd_a1, snd_a2, snd_p, snd_c1, snd_c2, snd_lone, snd_am, snd_pat, snd_k, snd_n1, snd_n2, snd_ch, snd_js, snd_c, snd_cq CASCADE;
DROP SCHEMA snd_s1, snd_s2, snd_evil, snd_hostile CASCADE;
DROP ACCESS METHOD snd_heap2;
DROP FUNCTION snd_diff, snd_plain, snd_team_seen, snd_kept, snd_param, snd_removed;
REVOKE USAGE ON SCHEMA public FROM snd_reader;
DROP ROLE snd_reader;
