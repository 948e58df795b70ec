-- The node run again inside one statement (ReScanCustomScan): as the inner
-- side of a nested loop, once per outer row, with the tenant, filter,
-- window, size and column filter of each outer row (LATERAL), in a
-- correlated subquery, and again with the same values (no Materialize to
-- spare it); on a plain table and on tables partitioned by id and by
-- created_at. Every statement is checked against itself with
-- alerts.custom_scan off (Postgres' own plans), and the node must have run
-- more than once (EXPLAIN ANALYZE's loops).
SET client_min_messages = warning;
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never
LOAD 'alerts';

-- The ids a statement returns, with and without the node, and how many
-- times the node ran (the largest loops of an AlertsSearch node).
CREATE FUNCTION rescan_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got text[] := '{}';
    want text[] := '{}';
    v text;
    plan json;
    loops int;
BEGIN
    PERFORM set_config('alerts.custom_scan', 'on', true);
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q INTO plan;
    WITH RECURSIVE n(node) AS (
        SELECT plan -> 0 -> 'Plan'
        UNION ALL
        SELECT c FROM n, json_array_elements(n.node -> 'Plans') c
    )
    SELECT max((node ->> 'Actual Loops')::int) INTO loops
    FROM n WHERE node ->> 'Custom Plan Provider' = 'AlertsSearch';
    FOR v IN EXECUTE q LOOP
        got := got || v;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'off', true);
    FOR v IN EXECUTE q LOOP
        want := want || v;
    END LOOP;
    PERFORM set_config('alerts.custom_scan', 'on', true);
    RETURN format('%s rows, %s, %s', cardinality(want),
                  CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END,
                  CASE WHEN loops IS NULL THEN 'no node' WHEN loops > 1 THEN 'node rescanned' ELSE 'node ran once' END);
END $$;

-- The same rows partitioned by id and by created_at (a default partition
-- too), with the recommended setup.
CREATE TABLE rq (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE rq_a PARTITION OF rq FOR VALUES FROM (MINVALUE) TO ('01JQ');
CREATE TABLE rq_b PARTITION OF rq FOR VALUES FROM ('01JQ') TO ('01JY');
CREATE TABLE rq_c PARTITION OF rq FOR VALUES FROM ('01JY') TO (MAXVALUE);
CREATE TABLE rp (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE TABLE rp_a PARTITION OF rp FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE rp_b PARTITION OF rp FOR VALUES FROM ('2025-07-01') TO ('2026-01-01');
CREATE TABLE rp_other PARTITION OF rp DEFAULT;
INSERT INTO rq SELECT * FROM alerts WHERE organisation_id IN ('ORG_B', 'ORG_C');
INSERT INTO rp SELECT * FROM alerts WHERE organisation_id IN ('ORG_B', 'ORG_C');
CALL alerts_enable('rq');
CALL alerts_enable('rp');
SELECT alerts_index_command('rq') \gexec
SELECT alerts_index_command('rp') \gexec
ANALYZE rq, rp;

SELECT t AS "table", shape, rescan_same(replace(q, 'TBL', t)) AS result
FROM (VALUES ('alerts'), ('rq'), ('rp')) tables(t), (VALUES
    ('a tenant per outer row',
     'SELECT o.org || '':'' || x.id FROM (VALUES (''ORG_C''), (''ORG_B''), (''NOPE''), (''ORG_C''), (NULL)) o(org)
      CROSS JOIN LATERAL (SELECT id FROM TBL a WHERE a.organisation_id = o.org AND a.attribute_values @> ''{"team": "T1"}''
                          ORDER BY id DESC LIMIT 7) x'),
    ('a filter, a window and a size per outer row',
     'SELECT o.n || '':'' || x.id FROM (VALUES
         (1, ''ORG_C'', ''{"env": "prod"}''::jsonb, ''01JX'', ''01JR'', 5),
         (2, ''ORG_B'', ''{"rare": "needle"}'', ''8'', '''', 50),
         (3, ''ORG_B'', ''{"team": "T2", "env": "staging"}'', ''01JZ'', ''01JW'', 500),
         (4, ''ORG_C'', NULL, ''8'', '''', 5),
         (5, ''ORG_B'', ''{"team": "NOPE"}'', ''8'', '''', 5),
         (6, ''ORG_C'', ''{"team": "T0"}'', ''8'', '''', NULL),
         (7, ''ORG_C'', ''{"env": "prod"}'', ''01JX'', ''01JR'', 0),
         (8, ''ORG_C'', ''{"env": "prod"}'', ''01JX'', ''01JR'', 5)) o(n, org, f, cur, lo, lim)
      CROSS JOIN LATERAL (SELECT id FROM TBL a WHERE a.organisation_id = o.org AND a.attribute_values @> o.f
                          AND a.id < o.cur AND a.id >= o.lo ORDER BY id DESC LIMIT o.lim) x'),
    ('oldest first, a cursor per outer row',
     'SELECT o.n || '':'' || x.id FROM (VALUES (1, ''01JQ''), (2, ''''), (3, ''01JY''), (4, ''01JQ'')) o(n, after)
      CROSS JOIN LATERAL (SELECT id FROM TBL a WHERE a.organisation_id = ''ORG_B'' AND a.attribute_values @> ''{"env": "prod"}''
                          AND a.id > o.after ORDER BY id LIMIT 9) x'),
    ('one of two filters and a column per outer row',
     'SELECT o.p || '':'' || x.id FROM (VALUES (1), (2), (3), (1)) o(p)
      CROSS JOIN LATERAL (SELECT id FROM TBL a WHERE a.organisation_id = ''ORG_C''
                          AND (a.attribute_values @> ''{"team": "T1"}'' OR a.attribute_values @> ''{"team": "T3"}'')
                          AND a.priority_id = o.p ORDER BY id DESC LIMIT 6 OFFSET 2) x'),
    ('a correlated scalar subquery',
     'SELECT o.org || '':'' || coalesce((SELECT id FROM TBL a WHERE a.organisation_id = o.org AND a.attribute_values @> ''{"env": "staging"}''
                                         ORDER BY id DESC LIMIT 1 OFFSET 30), ''none'')
      FROM (VALUES (''ORG_B''), (''ORG_C''), (''NOPE''), (''ORG_B'')) o(org)')
) shapes(shape, q)
ORDER BY 2, 1;

-- Ids that repeat (ULIDs cut to about 9 hours), in a plain table and
-- one partitioned by created_at: a page's tied rows are read whole, and a
-- rescan starts again without the last page's tie.
CREATE TABLE rr (LIKE alerts INCLUDING DEFAULTS);
CREATE TABLE rrp (LIKE alerts INCLUDING DEFAULTS, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at);
CREATE TABLE rrp_a PARTITION OF rrp FOR VALUES FROM ('2025-01-01') TO ('2025-07-01');
CREATE TABLE rrp_other PARTITION OF rrp DEFAULT;
INSERT INTO rr SELECT rpad(left(id, 5), 26, '0'), organisation_id, created_at, priority_id, attribute_values
FROM alerts WHERE organisation_id IN ('ORG_B', 'ORG_C');
INSERT INTO rrp SELECT * FROM rr;
CALL alerts_enable('rr');
CALL alerts_enable('rrp');
SELECT alerts_index_command('rr') \gexec
SELECT alerts_index_command('rrp') \gexec
ANALYZE rr, rrp;
SELECT count(*) > 2 * count(DISTINCT id) AS ids_repeat FROM rr;
SELECT t AS "table", shape, rescan_same(replace(q, 'TBL', t)) AS result
FROM (VALUES ('rr'), ('rrp')) tables(t), (VALUES
    ('with ties, a tenant and a size per outer row',
     'SELECT o.n || '':'' || x.id || x.attribute_values::text FROM (VALUES (1, ''ORG_C'', 7), (2, ''ORG_B'', 3), (3, ''ORG_C'', 7), (4, ''ORG_B'', 20)) o(n, org, lim)
      CROSS JOIN LATERAL (SELECT id, attribute_values FROM TBL a WHERE a.organisation_id = o.org AND a.attribute_values @> ''{"env": "prod"}''
                          ORDER BY id DESC FETCH FIRST o.lim ROWS WITH TIES) x ORDER BY 1'),
    ('a cursor per outer row, oldest first',
     'SELECT o.n || '':'' || x.id FROM (VALUES (1, ''01JQ''), (2, ''''), (3, ''01JQ'')) o(n, after)
      CROSS JOIN LATERAL (SELECT id FROM TBL a WHERE a.organisation_id = ''ORG_B'' AND a.attribute_values @> ''{"team": "T1"}''
                          AND a.id > o.after ORDER BY id LIMIT 9) x')
) shapes(shape, q)
ORDER BY 2, 1;
DROP TABLE rr, rrp;

-- Rescanned with the same values: the inner side of a nested loop (a LEFT
-- JOIN keeps the outer rows outer) with nothing between it and the node.
SET enable_material = off;
SET enable_memoize = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT t AS "table", rescan_same(replace(
    'SELECT v.k || '':'' || x.id FROM (VALUES (1), (2), (3)) v(k)
     LEFT JOIN (SELECT id FROM TBL a WHERE a.organisation_id = ''ORG_C'' AND a.attribute_values @> ''{"team": "T1"}''
                ORDER BY id DESC LIMIT 20) x ON true', 'TBL', t)) AS same_values_again
FROM (VALUES ('alerts'), ('rq'), ('rp')) tables(t);
RESET enable_material;
RESET enable_memoize;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- alerts_search itself once per outer row (its FunctionScan rescanned
-- with other arguments), against plain SQL without the node.
CREATE FUNCTION rescan_search(t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    outer_rows text := '(VALUES (1, ''ORG_C'', ''{"team": "T1"}''::jsonb, NULL, 6), (2, ''ORG_B'', ''{"rare": "needle"}'', NULL, 50),
                         (3, ''ORG_C'', ''{"env": "prod"}'', ''01JX'', 9), (4, ''ORG_C'', ''{"team": "T1"}'', NULL, 6)) o(k, org, f, cur, n)';
    got text[];
    want text[];
BEGIN
    EXECUTE format('SELECT array_agg(o.k || '':'' || s.id ORDER BY o.k, s.id DESC) FROM %s,
                    LATERAL alerts_search(NULL::%I, o.org, o.f, since => ''2020-01-01'', before_id => o.cur, page_size => o.n) s',
                   outer_rows, t) INTO got;
    PERFORM set_config('alerts.custom_scan', 'off', true);
    EXECUTE format('SELECT array_agg(o.k || '':'' || x.id ORDER BY o.k, x.id DESC) FROM %s
                    CROSS JOIN LATERAL (SELECT id FROM %I a WHERE a.organisation_id = o.org AND a.attribute_values @> o.f
                                        AND a.id >= alerts_ulid_floor(''2020-01-01'') AND (o.cur IS NULL OR a.id < o.cur)
                                        ORDER BY id DESC LIMIT o.n) x', outer_rows, t) INTO want;
    PERFORM set_config('alerts.custom_scan', 'on', true);
    RETURN format('%s rows, %s', cardinality(want), CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT' END);
END $$;
SELECT t AS "table", rescan_search(t) AS alerts_search_per_outer_row FROM (VALUES ('alerts'), ('rq'), ('rp')) tables(t);

DROP TABLE rq, rp;
DROP FUNCTION rescan_same(text), rescan_search(text);
