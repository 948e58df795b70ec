-- GIN's entries read in place (src/search/scan/entries.rs). With both the
-- tenant-keys index and GIN on the attributes, a page the walk finds rare
-- is answered from GIN when its entries for the filter list few rows in
-- the whole table (at most the rows the page wants + 16), with one descent
-- per key; otherwise (a value with more rows, here another tenant's, a
-- posting tree, a pending list of fast-update entries, a key of jsonb_ops
-- that every row has) the tenant keys answer, as before. Every match
-- satisfies each of the filter's clauses: the rarest clause's entries
-- answer ('k' is in every row, 'u' in one). Every page is
-- compared with the exact query; the routes are EXPLAIN ANALYZE's of the
-- same page in plain SQL. 30,000 distinct values give GIN's entry tree an
-- inner level, so the descent is checked on every leaf page of it. At
-- the end, a table without the tenant keys.
SET client_min_messages = warning;
SET TimeZone = 'UTC';

CREATE TABLE ge (id text COLLATE "C" PRIMARY KEY, organisation_id text COLLATE "C" NOT NULL,
                 attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON ge FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
-- tenant A: one value each (u), a common one (k); 'rare' 5 times, 'shared'
-- 3 times (and 200 times in tenant B), 'big' 3 times (3,000 in B)
INSERT INTO ge (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '5 minutes'), 'A',
       jsonb_build_object('u', 'v' || g, 'k', 'common')
       || CASE WHEN g % 6000 = 7 THEN '{"r": "rare"}' WHEN g % 10000 = 11 THEN '{"s": "shared"}'
               WHEN g % 10000 = 13 THEN '{"b": "big"}' ELSE '{}' END::jsonb
FROM generate_series(1, 30000) g;
INSERT INTO ge (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '7 minutes'), 'B',
       CASE WHEN g <= 200 THEN '{"s": "shared"}' ELSE '{"b": "big"}' END::jsonb
FROM generate_series(1, 3200) g;
CREATE INDEX ge_page ON ge (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX ge_keys ON ge USING gin (alerts_keys(organisation_id, id, attribute_values));
CREATE INDEX ge_gin ON ge USING gin (attribute_values jsonb_path_ops);
VACUUM ANALYZE ge;
SELECT pg_relation_size('ge_gin') / 8192 > 100 AS entry_tree_has_an_inner_level;

-- A page of alerts_search against the exact query, each twice (the second
-- time the remembered route goes straight to the rare path), first pages
-- and pages below a cursor.
CREATE FUNCTION ge_exact(f jsonb, size int, cursor text) RETURNS boolean LANGUAGE sql AS $$
    SELECT array(SELECT id FROM alerts_search(NULL::ge, 'A', f, '-infinity', cursor, size))
         = array(SELECT id FROM ge WHERE organisation_id = 'A' AND alerts_attrs_match(attribute_values, f)
                   AND id < coalesce(cursor, '~') ORDER BY id DESC LIMIT size) $$;
-- The route of a page in plain SQL, and how many rows it has.
CREATE FUNCTION ge_route(f jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format('EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) SELECT id FROM ge WHERE organisation_id = %L AND attribute_values @> %L ORDER BY id DESC LIMIT 10',
                   'A', f) INTO plan;
    RETURN format('%s row(s): %s', (plan -> 0 -> 'Plan' ->> 'Actual Rows')::numeric::int, jsonb_path_query_first(plan, '$.**."Routes Taken"') #>> '{}');
END $$;
CREATE VIEW ge_filters(f) AS SELECT f::jsonb FROM unnest(ARRAY[
    '{"u": "v1"}', '{"u": "v15000"}', '{"u": "v30000"}', '{"u": "none"}', '{"r": "rare"}',
    '{"u": ["v9", "v29990"]}', '{"u": "v42", "k": "common"}', '{"u": ["v9", "v29990"], "k": "common"}',
    '{"s": "shared"}', '{"b": "big"}', '{"s": "shared", "k": "common"}']) f;

SELECT f, bool_and(ge_exact(f, size, cursor)) AS exact, count(*) AS pages
FROM ge_filters, generate_series(1, 2) run, unnest(ARRAY[1, 3, 50]) size,
     unnest(ARRAY[NULL, alerts_ulid_floor('2026-02-20'), alerts_ulid_floor('2026-01-02')]) cursor
GROUP BY f ORDER BY f::text;
SELECT f, ge_route(f) AS first, ge_route(f) AS again FROM ge_filters ORDER BY f::text;

-- Oldest first (plain SQL through the node only): the same choice, each
-- page against the planner's own plan (alerts.custom_scan off).
CREATE FUNCTION ge_oldest(f jsonb, size int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    q text := format('SELECT id FROM ge WHERE organisation_id = %L AND attribute_values @> %L ORDER BY id ASC LIMIT %s', 'A', f, size);
    plan jsonb;
    node text[];
    planner text[];
BEGIN
    EXECUTE 'SELECT array_agg(id) FROM (' || q || ') s' INTO node;
    SET LOCAL alerts.custom_scan = off;
    EXECUTE 'SELECT array_agg(id) FROM (' || q || ') s' INTO planner;
    SET LOCAL alerts.custom_scan = on;
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
    RETURN format('%s, %s row(s): %s', CASE WHEN node IS NOT DISTINCT FROM planner THEN 'exact' ELSE 'WRONG' END,
                  coalesce(cardinality(node), 0), jsonb_path_query_first(plan, '$.**."Routes Taken"') #>> '{}');
END $$;
SELECT f, ge_oldest(f, 1) AS one, ge_oldest(f, 50) AS fifty FROM ge_filters ORDER BY f::text;

-- Every 97th of the 30,000 values: each found by one descent of the tree.
SELECT bool_and(ge_exact(jsonb_build_object('u', 'v' || g), 50, NULL)) AS exact, count(*) AS values
FROM generate_series(1, 30000, 97) g, generate_series(1, 2) run;

-- A row in the pending list (fast update, the default) is not in the
-- tree: the tenant keys answer, and find it. VACUUM moves it into the
-- tree, and GIN answers again. Without fast update, a new row goes
-- straight into the tree.
INSERT INTO ge (id, organisation_id, attribute_values)
VALUES (alerts_ulid(timestamptz '2026-03-01'), 'A', '{"r": "rare", "u": "new"}');
SELECT ge_exact('{"r": "rare"}', 50, NULL) AS exact, ge_route('{"r": "rare"}') AS pending;
VACUUM ge;
SELECT ge_exact('{"r": "rare"}', 50, NULL) AS exact, ge_route('{"r": "rare"}') AS vacuumed;
ALTER INDEX ge_gin SET (fastupdate = off);
INSERT INTO ge (id, organisation_id, attribute_values)
VALUES (alerts_ulid(timestamptz '2026-03-02'), 'A', '{"r": "rare", "u": "newer"}');
SELECT ge_exact('{"r": "rare"}', 50, NULL) AS exact, ge_route('{"r": "rare"}') AS no_fast_update;
DELETE FROM ge WHERE attribute_values @> '{"u": "newer"}';
SELECT ge_exact('{"r": "rare"}', 50, NULL) AS exact, ge_route('{"r": "rare"}') AS deleted;

-- jsonb_ops: text keys, a key for the attribute's name and one for its
-- value. 'u' is in every row (a posting tree): the tenant keys answer;
-- 'r' and 'rare' are both small: GIN answers from the two.
DROP INDEX ge_gin;
CREATE INDEX ge_gin_ops ON ge USING gin (attribute_values) WITH (fastupdate = off);
SELECT f, bool_and(ge_exact(f, size, NULL)) AS exact, ge_route(f) AS route
FROM unnest(ARRAY['{"u": "v15000"}', '{"r": "rare"}']::jsonb[]) f, generate_series(1, 2) run, unnest(ARRAY[1, 50]) size
GROUP BY f ORDER BY f::text;

-- Without the tenant keys: GIN's entries answer the rest of a page when
-- they list fewer rows than the walk left would cost in entries (ten a
-- row). After a first chunk of 1,000 entries with one match in 100, a
-- page of 50 is 40 rows short: 4,000 entries, 400 rows. 'pct' is in 300
-- of tenant A's rows and no other tenant's: GIN answers. 'wide' is in as
-- many of A's and 6,000 of B's: A's walk goes on. The route is of the
-- first of the page's reads (plain SQL); the pair is then remembered rare.
CREATE TABLE gw (id text COLLATE "C" PRIMARY KEY, organisation_id text COLLATE "C" NOT NULL,
                 attribute_values jsonb NOT NULL, attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON gw FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO gw (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '5 minutes'), 'A',
       jsonb_build_object('u', 'v' || g)
       || CASE g % 100 WHEN 3 THEN '{"p": "pct"}' WHEN 5 THEN '{"w": "wide"}' ELSE '{}' END::jsonb
FROM generate_series(1, 30000) g;
INSERT INTO gw (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '7 minutes'), 'B', '{"w": "wide"}'
FROM generate_series(1, 6000) g;
CREATE INDEX gw_page ON gw (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX gw_gin ON gw USING gin (attribute_values jsonb_path_ops) WITH (fastupdate = off);
VACUUM ANALYZE gw;
CREATE FUNCTION gw_page(f jsonb, size int, cursor text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    q text := format('SELECT id FROM gw WHERE organisation_id = %L AND attribute_values @> %L AND id < %L ORDER BY id DESC LIMIT %s',
                     'A', f, coalesce(cursor, '~'), size);
    plan jsonb;
    node text[];
    planner text[];
    search text[];
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) ' || q INTO plan;
    SELECT array_agg(id) INTO search FROM alerts_search(NULL::gw, 'A', f, '-infinity', cursor, size);
    EXECUTE 'SELECT array_agg(id) FROM (' || q || ') s' INTO node;
    SET LOCAL alerts.custom_scan = off;
    EXECUTE 'SELECT array_agg(id) FROM (' || q || ') s' INTO planner;
    SET LOCAL alerts.custom_scan = on;
    RETURN format('%s, %s row(s): %s',
                  CASE WHEN node IS NOT DISTINCT FROM planner AND search IS NOT DISTINCT FROM planner THEN 'exact' ELSE 'WRONG' END,
                  coalesce(cardinality(node), 0), jsonb_path_query_first(plan, '$.**."Routes Taken"') #>> '{}');
END $$;
SELECT f, size, cursor, gw_page(f, size, cursor) AS first, gw_page(f, size, cursor) AS again
FROM unnest(ARRAY['{"p": "pct"}', '{"w": "wide"}']::jsonb[]) f, unnest(ARRAY[20, 50]) size,
     unnest(ARRAY[NULL, alerts_ulid_floor('2026-02-20')]) cursor
ORDER BY f::text, size, cursor NULLS FIRST;
DROP FUNCTION gw_page(jsonb, int, text);
DROP TABLE gw;

DROP VIEW ge_filters;
DROP FUNCTION ge_exact(jsonb, int, text);
DROP FUNCTION ge_route(jsonb);
DROP FUNCTION ge_oldest(jsonb, int);
DROP TABLE ge;
