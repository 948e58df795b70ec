-- What the tenant-keys index costs on disk, and what changes it: the build's
-- maintenance_work_mem, a narrower key, wider time buckets; beside GIN
-- jsonb_path_ops and the pagination index with the bitmap as a key
-- expression instead of an INCLUDEd column. Runs on the benchmark's rows:
--
--     psql -h /tmp -p PORT -U postgres -d alerts_bench_full -f benches/sql/keys_size.sql
--
-- About 12 minutes on `full` (each variant is built, measured, dropped).
-- The variants' key functions are SQL wrappers made for this script and
-- dropped at its end: wider buckets hand alerts_keys an id whose time is the
-- start of the row's bucket (the generator's ids start with the ULID time of
-- created_at), so every row of a bucket gets the same keys.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE TEMP TABLE keys_size (n serial, variant text, bytes bigint, note text);

CREATE OR REPLACE FUNCTION keys_size_int4(k bigint[]) RETURNS int4[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT array_agg(DISTINCT ((x & 4294967295) - 2147483648)::int4) FROM unnest(k) x);
CREATE OR REPLACE FUNCTION keys_size_bucket_id(ts timestamptz, weeks int) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN alerts_ulid_floor(to_timestamp(floor(extract(epoch FROM ts) * 1000 / (604800000.0 * weeks))
                                          * 604800000.0 * weeks / 1000));
-- Free space on the index's pages by kind (entry leaves, posting-tree
-- leaves), from every 7th page.
CREATE OR REPLACE FUNCTION keys_size_fill(idx regclass) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s %s%% free', kind, round(100 * free / 8192.0)), ', ' ORDER BY kind)
    FROM (SELECT CASE WHEN o.flags = '{leaf}' THEN 'entry leaves' WHEN o.flags @> '{data,leaf}' THEN 'posting leaves' END AS kind,
                 avg(h.upper - h.lower) AS free
          FROM generate_series(1, (pg_relation_size(idx) / 8192)::int - 1, 7) b,
               LATERAL get_raw_page(idx::text, b) p, LATERAL gin_page_opaque_info(p) o, LATERAL page_header(p) h
          GROUP BY 1) s WHERE kind IS NOT NULL $$;

-- How many keys, and how many rows each.
SET work_mem = '1GB';
CREATE TEMP TABLE key_counts AS
    SELECT k, count(*) AS n FROM (SELECT unnest(alerts_keys(organisation_id, id, attribute_values)) AS k FROM alerts) s GROUP BY k;
SELECT count(*) AS distinct_keys, sum(n) AS row_keys, round(sum(n) / (SELECT count(*) FROM alerts), 2) AS keys_per_row,
       count(*) FILTER (WHERE n = 1) AS keys_with_1_row, count(*) FILTER (WHERE n BETWEEN 2 AND 20) AS keys_with_2_20,
       count(*) FILTER (WHERE n > 20) AS keys_with_more
FROM key_counts;
DROP TABLE key_counts;
RESET work_mem;

SET maintenance_work_mem = '1GB';
CREATE INDEX ks_1g ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys, built with 1GB', pg_relation_size('ks_1g'), keys_size_fill('ks_1g');
DROP INDEX ks_1g;
SET maintenance_work_mem = '64MB';
CREATE INDEX ks_64m ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys, built with 64MB', pg_relation_size('ks_64m'), keys_size_fill('ks_64m');
DROP INDEX ks_64m;
SET maintenance_work_mem = '16MB';
CREATE INDEX ks_16m ON alerts USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys, built with 16MB', pg_relation_size('ks_16m'), keys_size_fill('ks_16m');
DROP INDEX ks_16m;

SET maintenance_work_mem = '64MB';
CREATE INDEX ks_int4 ON alerts USING gin (keys_size_int4(alerts_keys(organisation_id, id, attribute_values)));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys as int4, 64MB', pg_relation_size('ks_int4'), 'GIN pads an entry to 8 bytes';
DROP INDEX ks_int4;
CREATE INDEX ks_2w ON alerts USING gin (alerts_keys(organisation_id, keys_size_bucket_id(created_at, 2), attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys of 2-week buckets, 64MB', pg_relation_size('ks_2w'), '';
DROP INDEX ks_2w;
CREATE INDEX ks_4w ON alerts USING gin (alerts_keys(organisation_id, keys_size_bucket_id(created_at, 4), attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'keys of 4-week buckets, 64MB', pg_relation_size('ks_4w'), '';
DROP INDEX ks_4w;

SET maintenance_work_mem = '1GB';
CREATE INDEX ks_gin_1g ON alerts USING gin (attribute_values jsonb_path_ops);
INSERT INTO keys_size (variant, bytes, note) SELECT 'GIN jsonb_path_ops, 1GB', pg_relation_size('ks_gin_1g'), '';
DROP INDEX ks_gin_1g;
SET maintenance_work_mem = '64MB';
CREATE INDEX ks_gin_64m ON alerts USING gin (attribute_values jsonb_path_ops);
INSERT INTO keys_size (variant, bytes, note) SELECT 'GIN jsonb_path_ops, 64MB', pg_relation_size('ks_gin_64m'), '';
DROP INDEX ks_gin_64m;

-- The pagination index: plain, with the bitmap INCLUDEd, and with the
-- bitmap computed as a key expression (no bitmap column in the heap).
SET maintenance_work_mem = '1GB';
CREATE INDEX ks_page ON alerts (organisation_id, id DESC);
INSERT INTO keys_size (variant, bytes, note) SELECT 'pagination index', pg_relation_size('ks_page'), '';
DROP INDEX ks_page;
CREATE INDEX ks_page_inc ON alerts (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO keys_size (variant, bytes, note) SELECT 'pagination index, bitmap INCLUDEd', pg_relation_size('ks_page_inc'), '';
DROP INDEX ks_page_inc;
CREATE INDEX ks_page_expr ON alerts (organisation_id, id DESC, alerts_bloom(attribute_values));
INSERT INTO keys_size (variant, bytes, note) SELECT 'pagination index, alerts_bloom(attribute_values) as a key', pg_relation_size('ks_page_expr'), '';
DROP INDEX ks_page_expr;
INSERT INTO keys_size (variant, bytes, note)
    SELECT 'bitmap column (in heap)', sum(pg_column_size(attribute_values_bitmap)), '' FROM alerts;
RESET maintenance_work_mem;

\pset format unaligned
\pset fieldsep ' | '
\pset tuples_only on
\echo | variant | MiB | bytes a row | pages |
\echo |---|---|---|---|
SELECT '', variant, round(bytes / 1048576.0, 1), round(bytes::numeric / (SELECT count(*) FROM alerts), 1), note, ''
FROM keys_size ORDER BY n;
DROP EXTENSION pageinspect;
DROP FUNCTION keys_size_int4(bigint[]), keys_size_bucket_id(timestamptz, int), keys_size_fill(regclass);
