-- The concurrent writer of tests/sql/enable.sql, run as a second client
-- process (psql in the background): one insert per transaction, its latency
-- logged, until told to stop; then it says it is done.
DO $$
DECLARE
    i int := 0;
    t0 timestamptz;
BEGIN
    LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM writer_stop);
        t0 := clock_timestamp();
        INSERT INTO live (id, organisation_id, attribute_values)
        VALUES (alerts_ulid(), 'org' || (i % 10), jsonb_build_object('env', 'e' || (i % 7), 'writer', i));
        INSERT INTO writer_log VALUES (i, t0, clock_timestamp() - t0);
        COMMIT;
        i := i + 1;
        PERFORM pg_sleep(0.002);
    END LOOP;
END $$;
INSERT INTO writer_done VALUES (true);
