-- alerts_search: differential test against the exact oracle on the table and
-- the 200 filters of query.sql, page by page with cursors, with and without a
-- GIN index (its rare-filter path), plus edge cases, errors and cancellation.
-- Column filters (columns => ...) run through the same differential, their
-- oracle plain SQL on the columns.
SET client_min_messages = warning;
-- Postgres' own plans for the oracles' plain SQL (the custom scan is
-- tested against them in plain.sql).
SET alerts.custom_scan = off;
CREATE INDEX idx_alerts_pagination_bitmap ON alerts (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
VACUUM ANALYZE alerts;

CREATE FUNCTION search_differential(run text, max_pages int, cols jsonb DEFAULT NULL, cols_sql text DEFAULT 'true') RETURNS TABLE (label text, filters bigint, pages bigint, mismatched_pages bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    oracle text[];
    page text[];
    cursor_id text;
    n int;
    bad int;
    total_pages bigint := 0;
    total_bad bigint := 0;
    size int;
    state text := table_state('alerts');
BEGIN
    FOR r IN SELECT * FROM filters ORDER BY n LOOP
        size := (ARRAY[50, 1, 7, 500])[1 + r.n % 4];
        oracle := oracle_ids('alerts', state, r.f, r.since, cols_sql);
        cursor_id := NULL;
        n := 0;
        bad := 0;
        LOOP
            SELECT coalesce(array_agg(s.id ORDER BY ord), '{}') INTO page
            FROM alerts_search(NULL::alerts, 'ORG_A', r.f, r.since, cursor_id, size, cols) WITH ORDINALITY AS s(id, organisation_id, created_at, priority_id, attribute_values, attribute_values_bitmap, ord);
            IF page IS DISTINCT FROM coalesce(oracle[n * size + 1 : n * size + size], '{}') THEN
                bad := bad + 1;
            END IF;
            n := n + 1;
            EXIT WHEN cardinality(page) < size OR n >= max_pages;
            cursor_id := page[size];
        END LOOP;
        total_pages := total_pages + n;
        total_bad := total_bad + bad;
    END LOOP;
    RETURN QUERY SELECT run, count(*), total_pages, total_bad FROM filters;
END $$;

-- Without GIN: the walk all the way.
SELECT * FROM search_differential('walk only', 12);
-- The same through the statement walk (the direct index walk off).
SET alerts.search_direct_scan = off;
SELECT * FROM search_differential('walk only, statements', 12);
RESET alerts.search_direct_scan;
-- Column filters, through both walkers.
SELECT * FROM search_differential('walk only, priority 1 or 3', 4, '{"priority_id": [1, 3]}', 'priority_id IN (1, 3)');
SET alerts.search_direct_scan = off;
SELECT * FROM search_differential('walk only, priority 1 or 3, statements', 4, '{"priority_id": [1, 3]}', 'priority_id IN (1, 3)');
RESET alerts.search_direct_scan;
-- With GIN: rare filters switch to it after the walk's budget.
CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops);
ANALYZE alerts;
SELECT * FROM search_differential('walk, then GIN', 12);
SELECT * FROM search_differential('walk, then GIN, priority 2', 4, '{"priority_id": "2"}', 'priority_id = 2');
-- The same without the session's shortcuts: every call walks first.
SET alerts.search_shortcuts = off;
SELECT * FROM search_differential('walk, then GIN, no shortcuts', 12);
RESET alerts.search_shortcuts;
-- With the tenant-keys index, which alerts_search prefers for rare filters:
-- week ranges newest first, bounded by ids, windows of 30 days to all time.
CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT * FROM search_differential('walk, then tenant keys', 12);
SELECT * FROM search_differential('walk, then tenant keys, priority 4 or 1', 4, '{"priority_id": [4, 1]}', 'priority_id IN (4, 1)');
SET alerts.search_shortcuts = off;
SELECT * FROM search_differential('walk, then tenant keys, no shortcuts', 12);
RESET alerts.search_shortcuts;
-- The same with the keys path's ranges read by the keys statement (the
-- direct walk off): above, the direct walker read them from the index.
SET alerts.search_direct_scan = off;
SELECT * FROM search_differential('walk, then tenant keys, statements', 12);
SELECT * FROM search_differential('walk, then tenant keys, priority 4 or 1, statements', 4, '{"priority_id": [4, 1]}', 'priority_id IN (4, 1)');
RESET alerts.search_direct_scan;
DROP INDEX alerts_keys_idx;

-- The GIN statement's predicate, alerts_filter_jsonpath, selects a superset
-- of the exact filter: no row a filter matches fails `@@` (5,000 rows x the
-- 200 filters), and the semantics' equalities hold for it.
SELECT count(DISTINCT f) FILTER (WHERE alerts_filter_jsonpath(f) IS NOT NULL) AS filters_with_jsonpath,
       count(*) FILTER (WHERE alerts_attrs_match(a.attribute_values, f)) AS exact_matches,
       count(*) FILTER (WHERE alerts_attrs_match(a.attribute_values, f) AND NOT a.attribute_values @@ alerts_filter_jsonpath(f)) AS missed
FROM filters, (SELECT attribute_values FROM alerts ORDER BY id LIMIT 5000) a;
SELECT f, a, alerts_attrs_match(a::jsonb, f::jsonb) AS exact, a::jsonb @@ alerts_filter_jsonpath(f::jsonb) AS candidate
FROM (VALUES ('{"n": 1}', '{"n": 1.0}'), ('{"n": [1, "x"]}', '{"n": [2, 1.00]}'), ('{"s": "a\"b\\"}', '{"s": ["q", "a\"b\\"]}'),
             ('{"b": true}', '{"b": [false, true]}'), ('{"k y": -0.5}', '{"k y": -0.50}'), ('{"n": [1, 2]}', '{"n": 2, "m": 3}'),
             ('{"": "é"}', '{"": "é"}'), ('{"n": 1}', '{"n": "1"}'), ('{"n": "x"}', '{"n": [["x"]]}')) v(f, a);
SELECT f, alerts_filter_jsonpath(f::jsonb) FROM unnest(ARRAY['{}', '{"a": "x", "b": []}', '{"o": {"x": 1}}', '{"a": ["x", 2]}']) f;

-- A filter a walk found rare goes straight to GIN for a few seconds: rows
-- that make it frequent meanwhile still page exactly, and so do searches
-- after the GIN index is dropped and created again in the same session.
CREATE TABLE route (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                    attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON route FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO route (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 second'), 'T', jsonb_build_object('svc', CASE WHEN g % 1000 = 0 THEN 'hot' ELSE 'cold' END)
FROM generate_series(1, 20000) g;
CREATE INDEX route_page ON route (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX route_gin ON route USING gin (attribute_values jsonb_path_ops);
VACUUM ANALYZE route;
CREATE FUNCTION route_exact(size int) RETURNS boolean LANGUAGE sql AS $$
    SELECT array(SELECT id FROM alerts_search(NULL::route, 'T', '{"svc": "hot"}', '-infinity', NULL, size))
         = array(SELECT id FROM route WHERE organisation_id = 'T' AND attribute_values @> '{"svc": "hot"}' ORDER BY id DESC LIMIT size) $$;
SELECT route_exact(50) AS rare, route_exact(50) AS rare_again;
INSERT INTO route (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-02-01' + g * interval '1 second'), 'T', '{"svc": "hot"}' FROM generate_series(1, 3000) g;
SELECT route_exact(50) AS now_frequent, route_exact(2000) AS big_page;
DROP INDEX route_gin;
SELECT route_exact(50) AS without_gin;
CREATE INDEX route_gin ON route USING gin (attribute_values jsonb_path_ops);
SELECT route_exact(50) AS gin_again, route_exact(3100) AS all_of_them;
SET alerts.search_shortcuts = off;
SELECT route_exact(50) AS no_shortcuts, current_setting('alerts.search_shortcuts') AS setting;
RESET alerts.search_shortcuts;
DROP TABLE route;
DROP FUNCTION route_exact(int);

-- Tenant keys on ids that are not all ULIDs: lowercase ULIDs and other ids
-- fall in no week and are looked up in every range, bounded by the id; a
-- cursor far in the future ('ZZZ...') reads the tenant's weeks, not the
-- cursor's.
CREATE TABLE keyed (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                    attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON keyed FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO keyed (id, organisation_id, attribute_values)
SELECT CASE g % 50 WHEN 0 THEN lower(u) WHEN 1 THEN 'order-' || g ELSE u END, 'K' || (g % 3),
       jsonb_build_object('svc', CASE WHEN g % 97 = 0 THEN 'rare' ELSE 's' || (g % 5) END, 'n', g % 7, 'tags', jsonb_build_array('t' || (g % 11), 'x'))
FROM generate_series(1, 30000) g, LATERAL (SELECT alerts_ulid(timestamptz '2025-03-01' + g * interval '15 minutes') AS u) x;
CREATE INDEX keyed_page ON keyed (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX keyed_keys ON keyed USING gin (alerts_keys(organisation_id, id, attribute_values));
VACUUM ANALYZE keyed;
SELECT f, bool_and(array(SELECT id FROM alerts_search(NULL::keyed, 'K1', f::jsonb, since, c, size))
                 = array(SELECT id FROM keyed WHERE organisation_id = 'K1' AND alerts_attrs_match(attribute_values, f::jsonb)
                           AND id >= alerts_ulid_floor(since) AND id < coalesce(c, '~') ORDER BY id DESC LIMIT size)) AS exact,
       count(*) AS cases
FROM unnest(ARRAY['{"svc": "rare"}', '{"svc": "rare", "n": [1, 2]}', '{"tags": "t3", "svc": "rare"}', '{"svc": "none"}']) f,
     unnest(ARRAY[5, 50]) size,
     unnest(ARRAY[timestamptz '-infinity', timestamptz '2025-05-01', timestamptz '2025-06-20']) since,
     LATERAL (SELECT NULL::text AS c UNION ALL SELECT 'order-20000' UNION ALL SELECT lower(alerts_ulid_floor('2025-06-01'))
              UNION ALL SELECT alerts_ulid_floor('2025-06-01') UNION ALL SELECT alerts_ulid_floor('2025-07-01')
              UNION ALL SELECT repeat('Z', 26)) cursors
GROUP BY f ORDER BY f;
DROP TABLE keyed;

-- Bursts: a value at 1% among a tenant's newest 3000 rows and absent below
-- them (with pages of 50 the walk's first two chunks see it as frequent, the
-- third as rare and switches to GIN for the rest), and a value absent from the tenant but
-- frequent in others (GIN reads the others' rows and drops them). Pages must
-- still equal the exact filter, for every page size and cursor.
CREATE TABLE burst (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                    attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON burst FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO burst (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 second'), 'T' || (g % 4),
       jsonb_build_object('svc', CASE WHEN g > 68000 AND g % 400 = 1 THEN 'hot' ELSE 's' || (g % 9) END,
                          'env', CASE WHEN g % 4 = 2 THEN 'shared' ELSE 'e' || (g % 3) END,
                          'old', CASE WHEN g % 4 = 1 AND g < 400 THEN 'yes' ELSE 'no' END)
FROM generate_series(1, 80000) g;
CREATE INDEX burst_page ON burst (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX burst_gin ON burst USING gin (attribute_values jsonb_path_ops);
VACUUM ANALYZE burst;
SELECT f AS filter, size,
       bool_and(array(SELECT id FROM alerts_search(NULL::burst, 'T1', f::jsonb, '-infinity', c, size))
              = array(SELECT id FROM burst WHERE organisation_id = 'T1' AND attribute_values @> f::jsonb AND id < coalesce(c, '8')
                      ORDER BY id DESC LIMIT size)) AS exact
FROM unnest(ARRAY['{"svc": "hot"}', '{"env": "shared"}', '{"old": "yes"}', '{"svc": "hot", "env": "e1"}']) f,
     unnest(ARRAY[10, 50, 400]) size,
     LATERAL (SELECT NULL::text AS c UNION ALL (SELECT id FROM burst WHERE organisation_id = 'T1' ORDER BY id DESC OFFSET 100 LIMIT 1)) cursors
GROUP BY f, size ORDER BY f, size;
DROP TABLE burst;

-- Whole rows from a table laid out unlike alerts: its pagination index
-- ascending and without the bitmap (the walk tests the heap's bitmap), a
-- dropped column, rows not yet backfilled (NULL bitmap: candidates, decided
-- by the exact check), attributes stored out of line (TOAST). Both walkers
-- return the table's rows, column for column.
CREATE TABLE shapes (gone int, id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, note text,
                     attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
ALTER TABLE shapes ALTER attribute_values SET STORAGE EXTERNAL;
INSERT INTO shapes (gone, id, organisation_id, note, attribute_values)
SELECT g, alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'S' || (g % 2), CASE WHEN g % 5 <> 0 THEN 'n' || g END,
       jsonb_build_object('svc', 's' || (g % 4), 'blob', CASE WHEN g % 10 = 1 THEN repeat('x', 3000) END)
FROM generate_series(1, 4000) g;
UPDATE shapes SET attribute_values_bitmap = alerts_bloom(attribute_values) WHERE gone % 3 <> 0;
ALTER TABLE shapes DROP COLUMN gone;
CREATE INDEX shapes_page ON shapes (organisation_id, id);
VACUUM ANALYZE shapes;
SELECT count(*) FILTER (WHERE pg_column_size(attribute_values) > 2000) AS toasted, count(*) FILTER (WHERE attribute_values_bitmap IS NULL) AS no_bitmap FROM shapes;
CREATE FUNCTION shapes_same(f jsonb, size int) RETURNS boolean LANGUAGE sql AS $$
    SELECT (SELECT coalesce(string_agg(s::text, '|'), '') FROM alerts_search(NULL::shapes, 'S1', f, '-infinity', NULL, size) s)
         = (SELECT coalesce(string_agg(t::text, '|' ORDER BY t.id DESC), '')
            FROM (SELECT * FROM shapes WHERE organisation_id = 'S1' AND alerts_attrs_match(attribute_values, f) ORDER BY id DESC LIMIT size) t) $$;
CREATE TEMP TABLE shape_cases AS
SELECT f, size FROM unnest(ARRAY['{}', '{"svc": "s1"}', '{"svc": ["s1", "s3"]}', '{"blob": "none"}']) f,
                    unnest(ARRAY[7, 300, 5000]) size;
SELECT f, bool_and(shapes_same(f::jsonb, size)) AS direct FROM shape_cases GROUP BY f ORDER BY f;
SET alerts.search_direct_scan = off;
SELECT f, bool_and(shapes_same(f::jsonb, size)) AS statements FROM shape_cases GROUP BY f ORDER BY f;
RESET alerts.search_direct_scan;
-- Column filters on the same table: `note` comes after the dropped column
-- (its number is not its position) and is NULL on every fifth row.
CREATE FUNCTION shapes_columns_same(f jsonb, size int) RETURNS boolean LANGUAGE sql AS $$
    SELECT (SELECT coalesce(string_agg(s::text, '|'), '')
            FROM alerts_search(NULL::shapes, 'S1', f, '-infinity', NULL, size, '{"note": [null, "n3", "n7", "n11", "n13"]}') s)
         = (SELECT coalesce(string_agg(t::text, '|' ORDER BY t.id DESC), '')
            FROM (SELECT * FROM shapes WHERE organisation_id = 'S1' AND alerts_attrs_match(attribute_values, f)
                  AND (note IS NULL OR note IN ('n3', 'n7', 'n11', 'n13')) ORDER BY id DESC LIMIT size) t) $$;
SELECT f, bool_and(shapes_columns_same(f::jsonb, size)) AS columns_direct FROM shape_cases GROUP BY f ORDER BY f;
SET alerts.search_direct_scan = off;
SELECT f, bool_and(shapes_columns_same(f::jsonb, size)) AS columns_statements FROM shape_cases GROUP BY f ORDER BY f;
RESET alerts.search_direct_scan;
SELECT count(*) AS null_notes FROM alerts_search(NULL::shapes, 'S1', '{}', '-infinity', NULL, 5000, '{"note": null}');
SELECT count(*) AS every_row FROM alerts_search(NULL::shapes, 'S1', '{}', '-infinity', NULL, 5000, '{}');
SELECT count(*) AS no_value FROM alerts_search(NULL::shapes, 'S1', '{}', '-infinity', NULL, 5000, '{"note": []}');
SELECT alerts_columns_match(s, '{"note": "n3"}') AS match_fn, count(*) FROM shapes s GROUP BY 1 ORDER BY 1;
-- Which walker ran: the statement walk calls alerts_search_probe for every
-- index entry, the direct walk never does.
CREATE FUNCTION probe_calls(rel text, org text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    before bigint := coalesce(pg_stat_get_xact_function_calls('alerts_search_probe(text,bit,jsonb)'::regprocedure), 0);
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM alerts_search(NULL::%I, %L, ''{}'', ''-infinity'', NULL, 50)', rel, org) INTO n;
    RETURN coalesce(pg_stat_get_xact_function_calls('alerts_search_probe(text,bit,jsonb)'::regprocedure), 0) - before;
END $$;
SET track_functions = 'all';
SELECT probe_calls('alerts', 'ORG_A') AS alerts_direct, probe_calls('shapes', 'S1') AS shapes_direct;
SET alerts.search_direct_scan = off;
SELECT probe_calls('alerts', 'ORG_A') > 0 AS alerts_statements, probe_calls('shapes', 'S1') > 0 AS shapes_statements;
RESET alerts.search_direct_scan;
RESET track_functions;
DROP FUNCTION probe_calls(text, text);
-- A range of the keys path whose bitmap outgrows work_mem turns lossy: the
-- direct walker hands that range to the keys statement (seen as calls of
-- alerts_attrs_match, which only the statements make). 5,000 newest rows
-- without the value send the walk to the keys path; 125,000 older ones in
-- the same week have it. The shortcuts are off: a rare path's answer
-- that fetched 125,000 rows is remembered, and the next call would walk.
CREATE TABLE lossy (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                    attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON lossy FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO lossy (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-03-02' + g * interval '1 second'), 'L', jsonb_build_object('svc', CASE WHEN g > 125000 THEN 'new' ELSE 'old' END)
FROM generate_series(1, 130000) g;
CREATE INDEX lossy_page ON lossy (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX lossy_keys ON lossy USING gin (alerts_keys(organisation_id, id, attribute_values));
VACUUM ANALYZE lossy;
CREATE FUNCTION lossy_page(OUT exact boolean, OUT statement_calls bigint) LANGUAGE plpgsql AS $$
DECLARE
    before bigint := coalesce(pg_stat_get_xact_function_calls('alerts_attrs_match(jsonb,jsonb)'::regprocedure), 0);
BEGIN
    exact := array(SELECT id FROM alerts_search(NULL::lossy, 'L', '{"svc": "old"}', '-infinity', NULL, 50))
           = array(SELECT id FROM lossy WHERE organisation_id = 'L' AND attribute_values @> '{"svc": "old"}' ORDER BY id DESC LIMIT 50);
    statement_calls := coalesce(pg_stat_get_xact_function_calls('alerts_attrs_match(jsonb,jsonb)'::regprocedure), 0) - before;
END $$;
SET track_functions = 'all';
SET alerts.search_shortcuts = off;
SELECT exact, statement_calls = 0 AS read_directly FROM lossy_page();
SET work_mem = '64kB';
SELECT exact, statement_calls > 0 AS by_statement FROM lossy_page();
RESET work_mem;
-- The GIN path the same way: the GIN index on the attributes read in place
-- while its bitmap is exact, the GIN statement once it turns lossy.
DROP INDEX lossy_keys;
CREATE INDEX lossy_gin ON lossy USING gin (attribute_values jsonb_path_ops);
SELECT exact, statement_calls = 0 AS read_directly FROM lossy_page();
SET work_mem = '64kB';
SELECT exact, statement_calls > 0 AS by_statement FROM lossy_page();
RESET work_mem;
RESET alerts.search_shortcuts;
RESET track_functions;
DROP FUNCTION lossy_page();
DROP TABLE lossy;
DROP FUNCTION shapes_same(jsonb, int);
DROP TABLE shapes;

-- Edge cases.
SELECT count(*) AS first_page FROM alerts_search(NULL::alerts, 'ORG_A', '{}', '2025-12-01');
SELECT count(*) AS every_row_of_c FROM alerts_search(NULL::alerts, 'ORG_C', '{}', '-infinity', NULL, 100000);
SELECT count(*) AS no_match FROM alerts_search(NULL::alerts, 'ORG_A', '{"team": "nope"}', '-infinity');
SELECT count(*) AS empty_one_of FROM alerts_search(NULL::alerts, 'ORG_A', '{"team": []}', '-infinity');
SELECT count(*) AS unknown_org FROM alerts_search(NULL::alerts, 'nobody', '{}', '-infinity');
SELECT count(*) AS window_in_future FROM alerts_search(NULL::alerts, 'ORG_A', '{}', now() + interval '1 day');
SELECT count(*) AS cursor_at_start FROM alerts_search(NULL::alerts, 'ORG_A', '{}', '-infinity', '00000000000000000000000000');
-- Newest first, ids strictly below the cursor, all in the window.
WITH p AS (SELECT id, row_number() OVER () AS i FROM alerts_search(NULL::alerts, 'ORG_B', '{"env": "prod"}', '2025-06-01', alerts_ulid_floor('2025-09-01'), 200))
SELECT count(*) AS rows, bool_and(id < alerts_ulid_floor('2025-09-01')) AS below_cursor,
       bool_and(id >= alerts_ulid_floor('2025-06-01')) AS in_window,
       (SELECT bool_and(a.id > b.id) FROM p a JOIN p b ON b.i = a.i + 1) AS strictly_descending
FROM p;
-- Rows written between two page requests: a newer one does not disturb the
-- next page; an older (backfilled) one appears where it belongs.
CREATE TEMP TABLE page1 AS SELECT id FROM alerts_search(NULL::alerts, 'ORG_C', '{"env": "prod"}', '-infinity', NULL, 20);
SELECT min(id) AS cursor_id FROM page1 \gset
INSERT INTO alerts (id, organisation_id, created_at, priority_id, attribute_values)
VALUES ('7ZZZZZZZZZZZZZZZZZZZZZZZZZ', 'ORG_C', now(), 1, '{"env": "prod"}'),
       ((SELECT max(id) FROM alerts WHERE organisation_id = 'ORG_C' AND id < :'cursor_id') || 'X', 'ORG_C', now(), 1, '{"env": "prod"}');
SELECT (SELECT array_agg(id ORDER BY id DESC) FROM alerts_search(NULL::alerts, 'ORG_C', '{"env": "prod"}', '-infinity', :'cursor_id', 5))
     = (SELECT array_agg(id ORDER BY id DESC) FROM (SELECT id FROM alerts WHERE organisation_id = 'ORG_C' AND id < :'cursor_id'
                                                    AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 5) s) AS next_page_exact,
       (SELECT id FROM alerts_search(NULL::alerts, 'ORG_C', '{"env": "prod"}', '-infinity', :'cursor_id', 1)) ~ '^.{27}$' AS backfilled_row_first,
       (SELECT id FROM alerts_search(NULL::alerts, 'ORG_C', '{"env": "prod"}', '-infinity', NULL, 1)) = '7ZZZZZZZZZZZZZZZZZZZZZZZZZ' AS newest_first;
DELETE FROM alerts WHERE organisation_id = 'ORG_C' AND (id = '7ZZZZZZZZZZZZZZZZZZZZZZZZZ' OR length(id) = 27);

-- Other column names through a view.
CREATE TABLE other_names (pk text COLLATE "C" PRIMARY KEY, tenant text COLLATE "C", attrs jsonb, bm bit(512));
CREATE TRIGGER other_bloom BEFORE INSERT OR UPDATE ON other_names FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('attrs', 'bm');
INSERT INTO other_names SELECT alerts_ulid(now() - i * interval '1 minute'), 't', jsonb_build_object('k', i % 3), NULL FROM generate_series(1, 30) i;
CREATE VIEW other_view AS SELECT pk AS id, tenant AS organisation_id, attrs AS attribute_values, bm AS attribute_values_bitmap FROM other_names;
SELECT count(*) AS through_view FROM alerts_search(NULL::other_view, 't', '{"k": 1}');

-- Errors.
\set VERBOSITY terse
SELECT * FROM alerts_search(NULL::int, 'ORG_A', '{}');
SELECT * FROM alerts_search(NULL::alerts, NULL, '{}');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', NULL);
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', page_size => 0);
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '[1]');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{"team": null}');
-- Column filters: not an object, an unknown column, a reserved one, a value
-- the type refuses, a nested value, a type without equality.
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', columns => '[1]');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', columns => '{"priority": 1}');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', columns => '{"attribute_values": {"team": "T1"}}');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', columns => '{"priority_id": "high"}');
SELECT * FROM alerts_search(NULL::alerts, 'ORG_A', '{}', columns => '{"priority_id": [[1]]}');
CREATE TABLE no_eq (id text PRIMARY KEY, organisation_id text, doc json, attribute_values jsonb, attribute_values_bitmap bit(512));
CREATE INDEX ON no_eq (organisation_id, id);
SELECT * FROM alerts_search(NULL::no_eq, 'o', '{}', columns => '{"doc": "{}"}');
DROP TABLE no_eq;
-- An ERROR raised inside the walk's batched calls (here the column's
-- equality, through a range type whose comparison raises) is a clean
-- ERROR, and the session searches exactly afterwards, in the same
-- transaction after a caught one too.
CREATE FUNCTION boom_cmp(a text, b text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF least(a, b) = 'a' AND greatest(a, b) = 'boom' THEN RAISE EXCEPTION 'boom_cmp refuses % against %', a, b; END IF;
  RETURN bttextcmp(a, b);
END $$;
CREATE OPERATOR CLASS boom_ops FOR TYPE text USING btree AS
  OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, FUNCTION 1 boom_cmp(text, text);
CREATE TYPE boom_range AS RANGE (subtype = text, subtype_opclass = boom_ops);
CREATE TABLE booms (id text COLLATE "C" PRIMARY KEY, organisation_id text COLLATE "C", r boom_range,
                    attribute_values jsonb, attribute_values_bitmap bit(512));
CREATE TRIGGER booms_bloom BEFORE INSERT OR UPDATE ON booms FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON booms (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO booms SELECT alerts_ulid(now() - i * interval '1 minute'), 'o',
                         (CASE WHEN i = 5 THEN '[boom,zz)' ELSE '[a,c)' END)::boom_range, '{"k": "v"}'
FROM generate_series(1, 10) i;
SELECT count(*) FROM alerts_search(NULL::booms, 'o', '{"k": "v"}', columns => '{"r": ["[a,c)"]}');
DO $$ BEGIN
  PERFORM * FROM alerts_search(NULL::booms, 'o', '{"k": "v"}', columns => '{"r": ["[a,c)"]}');
EXCEPTION WHEN raise_exception THEN RAISE NOTICE 'caught: %', SQLERRM;
END $$;
BEGIN;
DO $$ BEGIN
  PERFORM * FROM alerts_search(NULL::booms, 'o', '{"k": "v"}', columns => '{"r": ["[a,c)"]}');
EXCEPTION WHEN raise_exception THEN NULL;
END $$;
UPDATE booms SET r = '[b,c)' WHERE lower(r) = 'boom';
SELECT (SELECT array_agg(id) FROM alerts_search(NULL::booms, 'o', '{"k": "v"}', columns => '{"r": ["[a,c)"]}'))
     = (SELECT array_agg(id ORDER BY id DESC) FROM booms WHERE lower(r) = 'a') AS exact_after_caught_error;
COMMIT;
DROP TABLE booms; DROP TYPE boom_range; DROP OPERATOR FAMILY boom_ops USING btree; DROP FUNCTION boom_cmp;
-- Cancellation: a long walk (heap, no GIN, no match, whole history) stops on statement_timeout.
DROP INDEX alerts_gin;
DROP INDEX idx_alerts_pagination_bitmap;
SET statement_timeout = '10ms';
SELECT count(*) FROM alerts_search(NULL::alerts, 'ORG_A', '{"team": "nope"}', '-infinity', NULL, 10);
RESET statement_timeout;
SELECT 'still alive' AS after_cancel;

-- Concurrent inserts while paging. A second client process
-- (tests/clients/paging_writer.sql, psql in the background) inserts matching
-- rows with new ids, old ids and ids between pages, committing as we go.
CREATE TABLE before_paging AS SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"env": "prod"}';
CREATE TABLE seen (page int, id text);
CREATE TABLE writer_stop (stop boolean);
CREATE TABLE writer_done (done boolean);
\setenv PGDATABASE :DBNAME
\! psql -X -q -f tests/clients/paging_writer.sql >/dev/null 2>&1 &
DO $$
DECLARE
    cur text := NULL;
    p int := 0;
    n int;
BEGIN
    FOR i IN 1..600 LOOP  -- until the writer's first rows are in
        EXIT WHEN EXISTS (SELECT 1 FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values ? 'w');
        PERFORM pg_sleep(0.05);
    END LOOP;
    LOOP
        -- each page is its own statement, so it sees what committed before it
        INSERT INTO seen SELECT p, id FROM alerts_search(NULL::alerts, 'ORG_B', '{"env": "prod"}', '-infinity', cur, 500);
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n < 500;
        SELECT min(id) INTO cur FROM seen WHERE page = p;
        p := p + 1;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
SELECT (SELECT count(*) FROM seen) = (SELECT count(DISTINCT id) FROM seen) AS no_duplicates,
       NOT EXISTS (SELECT id FROM before_paging EXCEPT SELECT id FROM seen) AS no_row_skipped,
       (SELECT count(*) FROM seen s JOIN alerts a USING (id) WHERE a.attribute_values @> '{"env": "prod"}' AND a.organisation_id = 'ORG_B')
           = (SELECT count(*) FROM seen) AS all_exact,
       (SELECT count(*) FROM seen WHERE id NOT IN (SELECT id FROM before_paging)) > 0 AS saw_concurrent_rows;
-- In one REPEATABLE READ transaction the pages are exact for its snapshot,
-- whatever the writer commits meanwhile.
BEGIN ISOLATION LEVEL REPEATABLE READ;
CREATE TEMP TABLE snap_oracle AS SELECT id FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"env": "prod"}' ORDER BY id DESC LIMIT 300;
SELECT pg_sleep(0.1);
SELECT array(SELECT id FROM alerts_search(NULL::alerts, 'ORG_B', '{"env": "prod"}', '-infinity', NULL, 300))
     = array(SELECT id FROM snap_oracle ORDER BY id DESC) AS snapshot_exact;
COMMIT;
INSERT INTO writer_stop VALUES (true);
DO $$ BEGIN
    FOR i IN 1..600 LOOP EXIT WHEN EXISTS (SELECT 1 FROM writer_done); PERFORM pg_sleep(0.05); END LOOP;
END $$;
SELECT count(*) AS writer_finished FROM writer_done;
DELETE FROM alerts WHERE organisation_id = 'ORG_B' AND attribute_values @> '{"env": "prod"}' AND id NOT IN (SELECT id FROM before_paging);
DROP TABLE writer_stop, writer_done;
-- A row updated with its bitmap changed keeps its old version's entry in
-- the pagination index until VACUUM, next to the new one: two entries of
-- one id, the old one read first. A walk's chunk that ended between them
-- left the row to the rare path, which reads strictly below the chunk's
-- last id: the row was lost (found by the concurrency soak). Ids that
-- repeat meet the same boundary. A first chunk is 1000 entries for a page
-- of 20, 1200 for a page of 60.
CREATE TABLE versions (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL,
                       attribute_values jsonb NOT NULL) WITH (autovacuum_enabled = off);
INSERT INTO versions SELECT alerts_ulid(timestamptz '2026-11-01' + g * interval '1 minute'), 'T', jsonb_build_object('n', g)
FROM generate_series(1, 3000) g WHERE g <> 2005;
-- ten rows of one id, the 996th to 1005th newest entries; only the last
-- one read (the 1005th) has k = 10
INSERT INTO versions SELECT x.id, 'T', jsonb_build_object('tie', true, 'k', k)
FROM (SELECT alerts_ulid(timestamptz '2026-11-01' + 2005 * interval '1 minute') AS id OFFSET 0) x, generate_series(1, 10) k;
CALL alerts_enable('versions');
VACUUM FULL versions;  -- no free space: the new version goes last in the heap
CREATE INDEX versions_page ON versions (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX versions_gin ON versions USING gin (attribute_values jsonb_path_ops);
-- the 1200th newest row gets a new version: its entries are the 1200th
-- and the 1201st
UPDATE versions SET attribute_values = attribute_values || '{"hit": true}'
WHERE id = (SELECT id FROM versions ORDER BY id DESC OFFSET 1199 LIMIT 1);
SET alerts.search_shortcuts = off;
-- The same through a view, which the search reads with its prepared
-- statements (a chunk there ends on a whole id too, and looks each id up
-- once: the lookup returns every row of it).
CREATE VIEW versions_view AS SELECT * FROM versions;
CREATE FUNCTION versions_check() RETURNS TABLE (filter jsonb, found bigint, through_view bigint, distinct_rows bigint, exact bigint)
LANGUAGE sql AS $$
    SELECT f, (SELECT count(*) FROM alerts_search(NULL::versions, 'T', f, '-infinity', NULL, size)),
           (SELECT count(*) FROM alerts_search(NULL::versions_view, 'T', f, '-infinity', NULL, size)),
           (SELECT count(DISTINCT v) FROM alerts_search(NULL::versions_view, 'T', f, '-infinity', NULL, size) v),
           (SELECT count(*) FROM versions WHERE attribute_values @> f)
    FROM (VALUES ('{"hit": true}'::jsonb, 60), ('{"tie": true, "k": 10}', 20), ('{"tie": true}', 20)) v(f, size)
$$;
SELECT * FROM versions_check();
-- the same through the tenant-keys path
DROP INDEX versions_gin;
CREATE INDEX versions_keys ON versions USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT * FROM versions_check();
RESET alerts.search_shortcuts;
DROP TABLE versions CASCADE;

-- A bit(128) bitmap column (the bitmap folded, alerts_enable(bits => 128)):
-- the same differential on every walker and rare path, the trigger writing
-- 128 bits, the INCLUDE index holding them; then back to bit(512).
ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit(128) USING alerts_bloom(attribute_values, 128);
VACUUM ANALYZE alerts;
SELECT count(*) FILTER (WHERE length(attribute_values_bitmap) = 128) AS rows_128,
       count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values, 128)) AS wrong
FROM alerts;
SELECT * FROM search_differential('bit(128): walk, then GIN', 6);
SET alerts.search_direct_scan = off;
SELECT * FROM search_differential('bit(128): walk, then GIN, statements', 6);
RESET alerts.search_direct_scan;
CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT * FROM search_differential('bit(128): walk, then tenant keys, priority 4 or 1', 4, '{"priority_id": [4, 1]}', 'priority_id IN (4, 1)');
SET alerts.search_shortcuts = off;
SELECT * FROM search_differential('bit(128): walk, then tenant keys, no shortcuts', 6);
RESET alerts.search_shortcuts;
DROP INDEX alerts_keys_idx;
ALTER TABLE alerts ALTER COLUMN attribute_values_bitmap TYPE bit(512) USING alerts_bloom(attribute_values);
VACUUM ANALYZE alerts;
