-- The alert table of ../shared/context/the-problem.md, with the extension's
-- bitmap column kept by the trigger. Used by the demo and the benchmark.
CREATE EXTENSION IF NOT EXISTS alerts;
DROP TABLE IF EXISTS alerts CASCADE;
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
ALTER TABLE alerts ENABLE ALWAYS TRIGGER alerts_bloom;  -- as the README sets it up
