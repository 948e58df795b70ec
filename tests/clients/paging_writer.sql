-- The concurrent writer of tests/sql/search.sql, run as a second client
-- process (psql in the background): every 10 ms, 40 matching rows of ORG_B
-- with ids spread over the whole id range (new ids, old ids, ids between
-- pages), one transaction each, until told to stop; then it says it is done.
DO $$
DECLARE
    p int := 0;
BEGIN
    LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM writer_stop);
        INSERT INTO alerts (id, organisation_id, created_at, priority_id, attribute_values)
        SELECT alerts_ulid(timestamptz '2026-02-01' - random() * interval '400 days'), 'ORG_B', now(), 1,
               jsonb_build_object('env', 'prod', 'w', p)
        FROM generate_series(1, 40);
        COMMIT;
        p := p + 1;
        PERFORM pg_sleep(0.01);
    END LOOP;
END $$;
INSERT INTO writer_done VALUES (true);
