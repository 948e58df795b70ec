-- The demo's queries (see scripts/demo.sh for the data). Every step prints
-- one line saying what it shows, then shows it.
\set QUIET on
\pset footer off
-- long plan lines wrap at 120 columns
\pset format wrapped
\pset columns 120
-- attributes compactly, at most 64 characters: team=platform service=ledger feature=alerts|sso ...
CREATE FUNCTION pg_temp.attrs(a jsonb) RETURNS text LANGUAGE sql IMMUTABLE
    RETURN (SELECT CASE WHEN length(t) > 64 THEN left(t, 63) || '…' ELSE t END
            FROM (SELECT string_agg(key || '=' || CASE jsonb_typeof(value)
                         WHEN 'array' THEN (SELECT string_agg(v, '|') FROM jsonb_array_elements_text(value) v)
                         ELSE value #>> '{}' END, ' ' ORDER BY key) AS t
                  FROM jsonb_each(a)) x);
\set QUIET off

\echo '== The tenants: three named ones of known sizes, and many small ones'
SELECT role, org AS organisation_id, n AS alerts FROM bench_orgs WHERE role <> 'other' ORDER BY seq;
SELECT count(*) AS alerts, count(DISTINCT organisation_id) AS tenants,
       pg_size_pretty(pg_total_relation_size('alerts')) AS table_and_indexes FROM alerts;

\echo '== The newest alerts of acme: each row''s attributes, and how many of its bitmap''s 512 bits are set'
SELECT id, priority_id AS prio, pg_temp.attrs(attribute_values) AS attributes,
       bit_count(attribute_values_bitmap) AS bits
FROM alerts WHERE organisation_id = 'acme' ORDER BY id DESC LIMIT 5;

\set frequent '{"team": "platform", "feature": ["alerts", "billing"]}'
\set rare '{"team": "search"}'
\echo '== A frequent filter (team of ~50% of acme''s alerts, feature one of two), newest first in 30 days: the first 3 rows'
\echo :frequent
\timing on
SELECT id, pg_temp.attrs(attribute_values) AS attributes FROM alerts
WHERE organisation_id = 'acme'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'frequent')
  AND alerts_attrs_match(attribute_values, :'frequent')
ORDER BY id DESC LIMIT 3;
\timing off

\echo '== Its plan for a page of 50: a walk of the pagination index that stops when the page is full'
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = 'acme'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'frequent')
  AND alerts_attrs_match(attribute_values, :'frequent')
ORDER BY id DESC LIMIT 50;

\echo '== A rare filter (team of ~0.05% of acme''s alerts): the same walk reads the whole 30-day window'
\echo :rare
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = 'acme'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'rare')
  AND alerts_attrs_match(attribute_values, :'rare')
ORDER BY id DESC LIMIT 50;

\echo '== alerts_search: the same two pages in one call each (no GIN index yet, so the rare one still walks)'
\timing on
SELECT count(*) AS frequent_page FROM alerts_search(NULL::alerts, 'acme', :'frequent');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, 'acme', :'rare');
\timing off

\echo '== For comparison, a GIN jsonb_path_ops index and the same two pages through it (plans below)'
\timing on
CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops);
\timing off
ANALYZE alerts;
\echo '-- the frequent filter, as the planner chooses to run it now that GIN exists'
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = 'acme'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND attribute_values @> '{"team": "platform"}'
  AND (attribute_values @> '{"feature": ["alerts"]}' OR attribute_values @> '{"feature": ["billing"]}')
ORDER BY id DESC LIMIT 50;
\echo '-- the rare filter, as the planner chooses to run it (few matches: GIN is quick here)'
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = 'acme'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND attribute_values @> :'rare'
ORDER BY id DESC LIMIT 50;

\echo '== alerts_search with the GIN index present: a rare filter leaves the walk for GIN after one short chunk'
\timing on
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, 'acme', :'rare');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, 'acme', :'rare');
\timing off
\echo '== What the GIN index costs on disk, beside the pagination index'
SELECT pg_size_pretty(pg_relation_size('alerts_gin')) AS gin_index_size,
       pg_size_pretty(pg_relation_size('idx_alerts_pagination')) AS pagination_index_size;
DROP INDEX alerts_gin;

\echo '== The tenant-keys index instead: rare filters read only acme''s matches, newest weeks first'
\timing on
CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, 'acme', :'rare');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, 'acme', :'rare');
SELECT count(*) AS frequent_page FROM alerts_search(NULL::alerts, 'acme', :'frequent');
\timing off
\echo '== What the tenant-keys index costs on disk'
SELECT pg_size_pretty(pg_relation_size('alerts_keys_idx')) AS keys_index_size;
DROP INDEX alerts_keys_idx;

\echo '== A page of the rare filter as an application shows it'
SELECT id, alerts_ulid_time(id)::timestamp(0) AS created, pg_temp.attrs(attribute_values) AS attributes
FROM alerts_search(NULL::alerts, 'acme', :'rare', page_size => 5);
