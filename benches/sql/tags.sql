-- The peers' tags column (GIN on tags, RUM), filled as rows are generated:
-- run between schema.sql and generate.sql. Filling it afterwards with an
-- UPDATE wrote a second copy of every row and needed VACUUM FULL for a
-- third, which at the xl size (20M rows, a 25 GB heap) outgrew the disk.
--   tags  text[] of 'key=value' strings ('=': pgbench reads ':name' as a variable)
CREATE OR REPLACE FUNCTION bench_tags(attrs jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ARRAY(SELECT k || '=' || coalesce(e.v #>> '{}', a.v #>> '{}')
                 FROM jsonb_each(attrs) a(k, v)
                 LEFT JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(a.v) WHEN 'array' THEN a.v END) e(v) ON true);
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS tags text[];
CREATE OR REPLACE FUNCTION bench_tags_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tags := bench_tags(NEW.attribute_values);
    RETURN NEW;
END $$;
-- dropped by peers.sql (with its function) once the rows are in: the write benchmark's tables
-- are its own
CREATE TRIGGER bench_tags_fill BEFORE INSERT ON alerts
    FOR EACH ROW EXECUTE FUNCTION bench_tags_fill();
