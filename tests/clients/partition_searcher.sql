-- The concurrent searcher of tests/sql/partitioned.sql, run as a second
-- client process (psql in the background): pages through p_time newest
-- first, each page checked against the exact filter in the same statement
-- (one snapshot), one transaction per page, logging wrong pages and errors,
-- until told to stop; then it says it is done.
DO $$
DECLARE
    cur text;
    page text[];
    oracle text[];
    f jsonb;
BEGIN
    LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM searcher_stop);
        f := (ARRAY['{"env": "prod"}', '{"env": "staging", "ack": true}', '{"rare": "needle"}', '{}'])[1 + floor(random() * 4)::int];
        cur := NULL;
        FOR p IN 1..4 LOOP
            BEGIN
                SELECT array(SELECT id FROM alerts_search(NULL::p_time, 'ORG_A', f, '-infinity', cur, 200)),
                       array(SELECT id FROM p_time WHERE organisation_id = 'ORG_A' AND attribute_values @> f
                               AND id < coalesce(cur, '8') ORDER BY id DESC LIMIT 200)
                INTO page, oracle;
                INSERT INTO searcher_log (ok) VALUES (page = oracle);
                cur := page[200];
            EXCEPTION WHEN OTHERS THEN
                INSERT INTO searcher_log (ok, error) VALUES (true, SQLERRM);
                cur := NULL;
            END;
            COMMIT;
            EXIT WHEN cur IS NULL;
        END LOOP;
    END LOOP;
END $$;
INSERT INTO searcher_done VALUES (true);
