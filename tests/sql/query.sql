-- The documented query: its plan, and a differential test against an exact
-- oracle on 100,000 generated rows and 200 random filters, page by page.
-- The oracle is Postgres' own jsonb containment, not our code.
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
SET client_min_messages = warning;
SELECT setseed(0.4242);
CREATE TABLE alerts (
    id text COLLATE "C" NOT NULL PRIMARY KEY,
    organisation_id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    priority_id int NOT NULL,
    attribute_values jsonb NOT NULL DEFAULT '{}',
    attribute_values_bitmap bit(512)
);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON alerts
    FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX idx_alerts_pagination ON alerts (organisation_id, id DESC);
CREATE INDEX idx_alerts_created_at ON alerts (organisation_id, created_at);

-- 100k rows: three tenants (60%, 30%, 10%), skewed values, arrays, numbers,
-- booleans, nested objects, nulls, and 5% heavy rows with 60 extra tags so
-- the bloom produces false positives the recheck must drop.
INSERT INTO alerts (id, organisation_id, created_at, priority_id, attribute_values)
SELECT alerts_ulid(ts), org, ts, 1 + (random() * 3)::int, attrs
FROM (
    SELECT g,
           timestamptz '2026-01-01 00:00:00+00' - random() * interval '365 days' AS ts,
           CASE WHEN r < 0.6 THEN 'ORG_A' WHEN r < 0.9 THEN 'ORG_B' ELSE 'ORG_C' END AS org,
           jsonb_strip_nulls(jsonb_build_object(
               'team', 'T' || floor(power(random(), 3) * 40)::int,
               'service', 'S' || floor(random() * 200)::int,
               'feature', (SELECT jsonb_agg('F' || floor(power(random(), 2) * 50)::int) FROM generate_series(0, (random() * 2)::int + g % 1)),
               'env', CASE WHEN random() < 0.7 THEN 'prod' ELSE 'staging' END,
               'sev', 1 + floor(random() * 5)::int,
               'ack', random() < 0.5,
               'meta', CASE WHEN random() < 0.1 THEN jsonb_build_object('src', 'x' || floor(random() * 3)::int) END,
               'rare', CASE WHEN random() < 0.001 THEN 'needle' END
           )) || CASE WHEN random() < 0.05
                      THEN (SELECT jsonb_object_agg('tag' || i, 'v' || floor(random() * 1000)::int) FROM generate_series(1, 60 + g % 1) i)
                      ELSE '{}' END AS attrs
    FROM (SELECT g, random() AS r FROM generate_series(1, 100000) g) s
) d;
ANALYZE alerts;
SELECT organisation_id, count(*) FROM alerts GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE attribute_values_bitmap = alerts_bloom(attribute_values)) AS bitmaps_in_step, count(*) AS rows FROM alerts;
-- The native jsonb walk and the text-path reference agree on every row.
SELECT count(*) FILTER (WHERE alerts_bloom(attribute_values) = alerts_bloom_reference(attribute_values)) AS native_equals_reference FROM alerts;

-- The plan: a walk along the pagination index, no Sort, bloom test first.
EXPLAIN (COSTS OFF)
SELECT * FROM alerts
WHERE organisation_id = 'ORG_A'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND id < '01KDXJ8J000000000000000000'
  AND alerts_bloom_match(attribute_values_bitmap, '{"team": "T1", "feature": ["F1", "F2"]}')
  AND alerts_attrs_match(attribute_values, '{"team": "T1", "feature": ["F1", "F2"]}')
ORDER BY id DESC LIMIT 50;
-- The same as a prepared statement with a generic plan.
PREPARE page(text, timestamptz, text, jsonb) AS
SELECT * FROM alerts
WHERE organisation_id = $1
  AND id >= alerts_ulid_floor($2)
  AND id < $3
  AND alerts_bloom_match(attribute_values_bitmap, $4)
  AND alerts_attrs_match(attribute_values, $4)
ORDER BY id DESC LIMIT 50;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE page('ORG_A', now() - interval '30 days', '8', '{"team": "T1"}');
RESET plan_cache_mode;
-- Postgres' own plans for the oracles' plain SQL (the custom scan is
-- tested against them in plain.sql).
SET alerts.custom_scan = off;

-- The oracle: Postgres' jsonb containment, clause by clause.
CREATE FUNCTION oracle_sql(f jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(string_agg('(' || (
        SELECT coalesce(string_agg(format('attribute_values @> %L OR attribute_values @> %L',
                                          jsonb_build_object(c.key, alt), jsonb_build_object(c.key, jsonb_build_array(alt))), ' OR '), 'false')
        FROM jsonb_array_elements(CASE jsonb_typeof(c.value) WHEN 'array' THEN c.value ELSE jsonb_build_array(c.value) END) alt
    ) || ')', ' AND '), 'true')
    FROM jsonb_each(f) c
$$;

-- 200 random filters: drawn from rows (frequent and rare values), one-of,
-- two and three keys, numbers, booleans, objects, the rare needle, no match.
CREATE TABLE filters (n int PRIMARY KEY, f jsonb, since timestamptz);
CREATE FUNCTION random_filter(n int) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    src jsonb;
    f jsonb := '{}';
    keys text[];
    k text;
    nkeys int;
BEGIN
    SELECT attribute_values INTO src FROM alerts WHERE organisation_id = 'ORG_A' OFFSET floor(random() * 50000)::int LIMIT 1;
    CASE n % 10
        WHEN 0 THEN RETURN jsonb_build_object('rare', 'needle');
        WHEN 1 THEN RETURN jsonb_build_object('team', 'NOPE' || n);
        WHEN 2 THEN RETURN jsonb_build_object('service', jsonb_build_array('S' || floor(random() * 200)::int, 'S' || floor(random() * 200)::int, 'NOPE'));
        WHEN 3 THEN RETURN '{}';
        ELSE NULL;
    END CASE;
    SELECT array_agg(key ORDER BY random()) INTO keys FROM jsonb_object_keys(src) key;
    nkeys := 1 + n % 3;
    FOR i IN 1 .. least(nkeys, cardinality(keys)) LOOP
        k := keys[i];
        IF jsonb_typeof(src -> k) = 'array' THEN
            f := f || jsonb_build_object(k, CASE WHEN random() < 0.5 THEN src -> k -> 0 ELSE src -> k END);
        ELSIF random() < 0.3 THEN
            f := f || jsonb_build_object(k, jsonb_build_array(src -> k, 'T' || floor(random() * 40)::int));
        ELSE
            f := f || jsonb_build_object(k, src -> k);
        END IF;
    END LOOP;
    RETURN f;
END $$;
INSERT INTO filters
SELECT n, random_filter(n),
       CASE n % 4 WHEN 0 THEN '-infinity' ELSE timestamptz '2026-01-01 00:00:00+00' - (30 + random() * 200) * interval '1 day' END
FROM generate_series(1, 200) n;
SELECT count(DISTINCT f) > 100 AS varied_filters FROM filters;

-- The oracle's answer for one filter: the ids of tenant ORG_A's rows in
-- `tbl` that match f (and the column quals cols_sql) at or after `since`,
-- newest first, by Postgres' own plan. The differentials here and in
-- search.sql and partitioned.sql ask it for the same 200 filters many times
-- over the same rows (in alerts and in each partitioned copy of them), each
-- time for another path of ours: its answers are remembered per `state`,
-- the rows as the caller's role sees them hashed (bitmaps aside, whatever
-- the table), so any change to the rows asks Postgres again.
CREATE UNLOGGED TABLE oracle_answers (state text, key text, ids text[], PRIMARY KEY (state, key));
GRANT SELECT, INSERT ON oracle_answers TO PUBLIC;
CREATE FUNCTION table_state(tbl regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    s text;
BEGIN
    EXECUTE format('SELECT count(*) || '':'' || coalesce(sum(hashtextextended((to_jsonb(t) - ''attribute_values_bitmap'')::text, 0)), 0) FROM %s t', tbl)
        INTO s;
    RETURN s;
END $$;
CREATE FUNCTION oracle_ids(tbl regclass, state text, f jsonb, since timestamptz, cols_sql text DEFAULT 'true') RETURNS text[]
LANGUAGE plpgsql SET alerts.custom_scan = off AS $$
DECLARE
    quals text := format('WHERE organisation_id = ''ORG_A'' AND id >= %L AND (%s) AND (%s)', alerts_ulid_floor(since), oracle_sql(f), cols_sql);
    ids text[];
BEGIN
    SELECT a.ids INTO ids FROM oracle_answers a WHERE a.state = oracle_ids.state AND a.key = md5(quals);
    IF NOT FOUND THEN
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id DESC), ''{}'') FROM %s ', tbl) || quals INTO ids;
        INSERT INTO oracle_answers VALUES (state, md5(quals), ids);
    END IF;
    RETURN ids;
END $$;

CREATE TABLE results (n int, oracle_rows int, pages int, mismatched_pages int, false_positives int);
DO $$
DECLARE
    r record;
    oracle text[];
    page text[];
    cursor_id text;
    pages int;
    bad int;
    fp int;
    state text := table_state('alerts');
BEGIN
    FOR r IN SELECT * FROM filters ORDER BY n LOOP
        oracle := oracle_ids('alerts', state, r.f, r.since);
        cursor_id := '8';  -- above every ULID: the first page
        pages := 0;
        bad := 0;
        LOOP
            SELECT coalesce(array_agg(id ORDER BY id DESC), '{}') INTO page FROM (
                SELECT id FROM alerts
                WHERE organisation_id = 'ORG_A'
                  AND id >= alerts_ulid_floor(r.since)
                  AND id < cursor_id
                  AND alerts_bloom_match(attribute_values_bitmap, r.f)
                  AND alerts_attrs_match(attribute_values, r.f)
                ORDER BY id DESC LIMIT 50) p;
            IF page IS DISTINCT FROM coalesce(oracle[pages * 50 + 1 : pages * 50 + 50], '{}') THEN
                bad := bad + 1;
            END IF;
            pages := pages + 1;
            EXIT WHEN cardinality(page) < 50 OR pages >= 40;
            cursor_id := page[50];
        END LOOP;
        SELECT count(*) INTO fp FROM alerts
        WHERE organisation_id = 'ORG_A' AND alerts_bloom_match(attribute_values_bitmap, r.f)
          AND NOT alerts_attrs_match(attribute_values, r.f);
        INSERT INTO results VALUES (r.n, cardinality(oracle), pages, bad, fp);
    END LOOP;
END $$;
SELECT count(*) AS filters,
       sum(mismatched_pages) AS mismatched_pages,
       count(*) FILTER (WHERE oracle_rows = 0) > 10 AS some_match_nothing,
       count(*) FILTER (WHERE oracle_rows BETWEEN 1 AND 100) > 10 AS some_rare,
       count(*) FILTER (WHERE oracle_rows > 2000) > 10 AS some_frequent,
       count(*) FILTER (WHERE pages >= 40) > 5 AS some_paged_deep,
       sum(false_positives) > 100 AS recheck_dropped_false_positives
FROM results;
SELECT n, f, oracle_rows, pages, mismatched_pages FROM results JOIN filters USING (n) WHERE mismatched_pages > 0 ORDER BY n;
