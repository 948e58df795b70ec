-- Ids repeated within a tenant, in one partition and across partitions
-- whose ids overlap (a table partitioned by created_at whose primary key
-- is (id, created_at): nothing makes an id unique), with ids at or after
-- '8' beside the ULIDs. Random pages (tenant, one or two attributes from
-- frequent to rare, LIMIT, OFFSET, a keyset cursor either way, a lower
-- bound) through plain SQL (one node searching the table whole, and one
-- per partition under a Merge Append; both read a page's tied rows whole)
-- and through alerts_search, each against Postgres' own plan; with the
-- tenant-keys and GIN rare paths, then GIN alone, then the walk alone.
-- The same seeds give the same pages on every version.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS alerts;
SET TimeZone = 'UTC';
CREATE TABLE rep (id text COLLATE "C" NOT NULL, organisation_id text COLLATE "C" NOT NULL, created_at timestamptz NOT NULL,
                  priority_id int NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (id, created_at))
    PARTITION BY RANGE (created_at);
CREATE TABLE rep_q1 PARTITION OF rep FOR VALUES FROM ('2026-01-01') TO ('2026-04-01');
CREATE TABLE rep_q2 PARTITION OF rep FOR VALUES FROM ('2026-04-01') TO ('2026-07-01');
CREATE TABLE rep_q3 PARTITION OF rep FOR VALUES FROM ('2026-07-01') TO ('2026-10-01');
CREATE TABLE rep_rest PARTITION OF rep DEFAULT;
SELECT setseed(0.42);
-- 40,000 draws of 15,000 minutes: most ids repeat; created_at is drawn
-- apart from the id, over a year, so the copies of an id land in one
-- partition or several.
INSERT INTO rep (id, organisation_id, created_at, priority_id, attribute_values)
SELECT CASE WHEN random() < 0.01 THEN 'z' || (k % 50)::text ELSE alerts_ulid_floor(timestamptz '2026-11-20' - k * interval '1 minute') END,
       (ARRAY['A', 'A', 'A', 'B', 'C'])[1 + floor(random() * 5)::int],
       timestamptz '2025-12-01' + random() * interval '365 days',
       1 + floor(random() * 4)::int,
       jsonb_build_object('team', 'T' || floor(power(random(), 3) * 40)::int, 'env', (ARRAY['prod', 'dev', 'stage'])[1 + floor(random() * 3)::int])
       || CASE WHEN random() < 0.002 THEN '{"rare": "yes"}'::jsonb ELSE '{}'::jsonb END
FROM (SELECT floor(random() * 15000)::int AS k FROM generate_series(1, 40000)) s
ON CONFLICT DO NOTHING;
CALL alerts_enable('rep');
SELECT alerts_index_command('rep') \gexec
CREATE INDEX rep_gin ON rep USING gin (attribute_values jsonb_path_ops);
CREATE INDEX rep_keys ON rep USING gin (alerts_keys(organisation_id, id, attribute_values));
ANALYZE rep;
SELECT count(*) > 30000 AS rows, count(*) - count(DISTINCT (organisation_id, id)) > 10000 AS repeated_in_tenant,
       (SELECT count(*) FROM (SELECT 1 FROM rep GROUP BY organisation_id, id HAVING count(DISTINCT tableoid) > 1) x) > 1000 AS across_partitions
FROM rep;
-- Searched whole by one node (the search merges the partitions); with
-- alerts.custom_scan_partitioned off, each partition its own node under
-- Postgres' Merge Append.
EXPLAIN (COSTS OFF)
SELECT id FROM rep WHERE organisation_id = 'A' AND attribute_values @> '{"team": "T3"}' ORDER BY id DESC LIMIT 10;
SET alerts.custom_scan_partitioned = off;
EXPLAIN (COSTS OFF)
SELECT id FROM rep WHERE organisation_id = 'A' AND attribute_values @> '{"team": "T3"}' ORDER BY id DESC LIMIT 10;
RESET alerts.custom_scan_partitioned;

CREATE FUNCTION rep_differential(cases int, seed float8)
RETURNS TABLE (interface text, pages int, mismatched int, first_mismatch text) LANGUAGE plpgsql AS $$
DECLARE
    org text; f jsonb; lim int; off int; cur text; since timestamptz; dir text; bound text; q text; r float8;
    oracle text[]; got text[];
    plain_pages int := 0; plain_bad int := 0; plain_first text;
    search_pages int := 0; search_bad int := 0; search_first text;
BEGIN
    PERFORM setseed(seed);
    FOR i IN 1..cases LOOP
        org := (ARRAY['A', 'B', 'C'])[1 + floor(random() * 3)::int];
        r := random();
        f := CASE WHEN r < 0.35 THEN jsonb_build_object('team', 'T' || floor(power(random(), 2) * 45)::int)
                  WHEN r < 0.5 THEN jsonb_build_object('env', (ARRAY['prod', 'dev', 'stage'])[1 + floor(random() * 3)::int])
                  WHEN r < 0.65 THEN '{"rare": "yes"}'::jsonb
                  WHEN r < 0.85 THEN jsonb_build_object('team', 'T' || floor(power(random(), 2) * 45)::int,
                                                        'env', (ARRAY['prod', 'dev'])[1 + floor(random() * 2)::int])
                  ELSE '{"rare": "yes", "env": "prod"}'::jsonb END;
        lim := (ARRAY[1, 2, 3, 7, 10, 50, 200])[1 + floor(random() * 7)::int];
        off := CASE WHEN random() < 0.2 THEN floor(random() * 20)::int ELSE 0 END;
        since := CASE WHEN random() < 0.3 THEN '-infinity' ELSE timestamptz '2026-11-20' - random() * interval '12 days' END;
        -- a cursor on an id the tenant has (often repeated), or none
        cur := CASE WHEN random() < 0.5 THEN NULL
                    ELSE (SELECT id FROM rep WHERE organisation_id = org ORDER BY id OFFSET floor(random() * 5000)::int LIMIT 1) END;
        dir := CASE WHEN random() < 0.8 THEN 'DESC' ELSE 'ASC' END;
        bound := CASE WHEN cur IS NULL THEN '' WHEN dir = 'DESC' THEN format('AND id < %L', cur) ELSE format('AND id > %L', cur) END;
        q := format('SELECT coalesce(array_agg(id), ''{}'') FROM (SELECT id FROM rep WHERE organisation_id = %L AND attribute_values @> %L
                     AND id >= alerts_ulid_floor(%L::timestamptz) %s ORDER BY id %s LIMIT %s OFFSET %s) s', org, f, since, bound, dir, lim, off);
        PERFORM set_config('alerts.custom_scan', 'off', true);
        EXECUTE q INTO oracle;
        PERFORM set_config('alerts.custom_scan', 'on', true);
        EXECUTE q INTO got;
        plain_pages := plain_pages + 1;
        IF got IS DISTINCT FROM oracle THEN
            plain_bad := plain_bad + 1;
            plain_first := coalesce(plain_first, format('%s: %s rows, expected %s', q, cardinality(got), cardinality(oracle)));
        END IF;
        IF dir = 'DESC' AND off = 0 THEN
            EXECUTE 'SELECT coalesce(array_agg(id ORDER BY ordinality), ''{}'') FROM alerts_search(NULL::rep, $1, $2, $3, $4, $5) WITH ORDINALITY'
                INTO got USING org, f, since, cur, lim;
            search_pages := search_pages + 1;
            IF got IS DISTINCT FROM oracle THEN
                search_bad := search_bad + 1;
                search_first := coalesce(search_first, format('alerts_search(%L, %L, %L, %L, %s): %s rows, expected %s',
                                                              org, f, since, cur, lim, cardinality(got), cardinality(oracle)));
            END IF;
        END IF;
    END LOOP;
    RETURN QUERY VALUES ('plain SQL', plain_pages, plain_bad, plain_first), ('alerts_search', search_pages, search_bad, search_first);
END $$;
SELECT * FROM rep_differential(600, 0.1);
SET alerts.custom_scan_partitioned = off;
SELECT * FROM rep_differential(400, 0.15);
RESET alerts.custom_scan_partitioned;
SET alerts.search_shortcuts = off;
SELECT * FROM rep_differential(300, 0.2);
RESET alerts.search_shortcuts;
DROP INDEX rep_keys;
SELECT * FROM rep_differential(300, 0.3);
SET alerts.custom_scan_partitioned = off;
SELECT * FROM rep_differential(300, 0.35);
RESET alerts.custom_scan_partitioned;
DROP INDEX rep_gin;
SELECT * FROM rep_differential(300, 0.4);
DROP FUNCTION rep_differential(int, float8);
DROP TABLE rep;
