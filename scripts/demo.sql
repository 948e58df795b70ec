-- The demo's queries (see scripts/demo.sh for the data).
\pset footer off
SELECT role, org, n AS alerts FROM bench_orgs WHERE role <> 'other' ORDER BY seq;
SELECT count(*) AS alerts, count(DISTINCT organisation_id) AS tenants,
       pg_size_pretty(pg_total_relation_size('alerts')) AS table_and_indexes FROM alerts;

-- One row, its attributes and its bitmap's fill.
SELECT id, alerts_ulid_time(id) AS created, attribute_values,
       bit_count(attribute_values_bitmap) AS bits_set
FROM alerts ORDER BY id DESC LIMIT 1;

SELECT org AS large FROM bench_orgs WHERE role = 'large' \gset
SELECT jsonb_build_object(bench_key(:'large', 'team'), bench_value(:'large', 'team', 0),
                          bench_key(:'large', 'feature'), jsonb_build_array(bench_value(:'large', 'feature', 0), bench_value(:'large', 'feature', 1))) AS frequent,
       jsonb_build_object(bench_key(:'large', 'team'), bench_value(:'large', 'team', 2)) AS rare
\gset
\echo
\echo '== Frequent filter (team of ~50% of alerts, and feature one of two), newest 50 in 30 days'
\echo :frequent
\timing on
SELECT id, priority_id, attribute_values FROM alerts
WHERE organisation_id = :'large'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'frequent')
  AND alerts_attrs_match(attribute_values, :'frequent')
ORDER BY id DESC LIMIT 3;
\timing off
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = :'large'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'frequent')
  AND alerts_attrs_match(attribute_values, :'frequent')
ORDER BY id DESC LIMIT 50;

\echo '== Rare filter (team of ~0.05% of alerts), newest 50 in 30 days'
\echo :rare
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = :'large'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND alerts_bloom_match(attribute_values_bitmap, :'rare')
  AND alerts_attrs_match(attribute_values, :'rare')
ORDER BY id DESC LIMIT 50;

\echo '== alerts_search: the same pages in one call (no GIN yet: rare filters walk the whole window)'
\timing on
SELECT count(*) AS frequent_page FROM alerts_search(NULL::alerts, :'large', :'frequent');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, :'large', :'rare');
\timing off

\echo '== The same two pages through a GIN jsonb_path_ops index'
\timing on
CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops);
\timing off
ANALYZE alerts;
SELECT jsonb_build_object(bench_key(:'large', 'team'), bench_value(:'large', 'team', 0)) AS f_team,
       jsonb_build_object(bench_key(:'large', 'feature'), jsonb_build_array(bench_value(:'large', 'feature', 0))) AS f_feat0,
       jsonb_build_object(bench_key(:'large', 'feature'), jsonb_build_array(bench_value(:'large', 'feature', 1))) AS f_feat1
\gset
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = :'large'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND attribute_values @> :'f_team' AND (attribute_values @> :'f_feat0' OR attribute_values @> :'f_feat1')
ORDER BY id DESC LIMIT 50;
EXPLAIN (ANALYZE, COSTS OFF, BUFFERS, TIMING OFF, SUMMARY ON)
SELECT * FROM alerts
WHERE organisation_id = :'large'
  AND id >= alerts_ulid_floor(now() - interval '30 days')
  AND attribute_values @> :'rare'
ORDER BY id DESC LIMIT 50;
\echo '== alerts_search with the GIN index: rare filters switch to it after a short walk'
\timing on
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, :'large', :'rare');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, :'large', :'rare');
\timing off
SELECT pg_size_pretty(pg_relation_size('alerts_gin')) AS gin_index_size,
       pg_size_pretty(pg_relation_size('idx_alerts_pagination')) AS pagination_index_size;
DROP INDEX alerts_gin;

\echo '== alerts_search with the tenant-keys index: rare filters read only this tenant''s matches of the newest weeks'
\timing on
CREATE INDEX alerts_keys_idx ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, :'large', :'rare');
SELECT count(*) AS rare_page FROM alerts_search(NULL::alerts, :'large', :'rare');
SELECT count(*) AS frequent_page FROM alerts_search(NULL::alerts, :'large', :'frequent');
\timing off
SELECT pg_size_pretty(pg_relation_size('alerts_keys_idx')) AS keys_index_size;
DROP INDEX alerts_keys_idx;
