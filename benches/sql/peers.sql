-- Structures of every method compared by the benchmark, built on the
-- generated `alerts` table:
--   tags        text[] of 'key=value' strings, filled by tags.sql (GIN on tags, RUM)
--   alerts_gin  GIN jsonb_path_ops on attribute_values
--   alerts_tags_gin  GIN on tags
--   alerts_tags_rum  RUM on tags with created_at attached (ORDER BY created_at <=| now())
--   idx_alerts_pagination_bitmap  the pagination index with the bitmap INCLUDEd (index-only walk)
-- psql variable rum: on when the server has the RUM extension (here: Debian's
-- package, for PostgreSQL 15 only).
\if :rum
CREATE EXTENSION IF NOT EXISTS rum;
\endif
-- tags was filled as the rows were generated (tags.sql); generate.sql
-- vacuumed and analysed the table
DROP TRIGGER bench_tags_fill ON alerts;
DROP FUNCTION bench_tags_fill();
-- GIN and RUM at PostgreSQL's default maintenance_work_mem, as users build
-- them (run.py's GIN_BUILD says why).
SET maintenance_work_mem = '64MB';
CREATE INDEX alerts_gin ON alerts USING gin (attribute_values jsonb_path_ops);
CREATE INDEX alerts_tags_gin ON alerts USING gin (tags);
\if :rum
CREATE INDEX alerts_tags_rum ON alerts USING rum (tags rum_anyarray_addon_ops, created_at)
    WITH (attach = 'created_at', to = 'tags');
\endif
RESET maintenance_work_mem;
CREATE INDEX idx_alerts_pagination_bitmap ON alerts (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
VACUUM (ANALYZE) alerts;
