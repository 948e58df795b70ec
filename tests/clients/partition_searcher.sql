-- The concurrent searcher of tests/sql/partitioned.sql, run as a second
-- client process (psql in the background): pages through p_time newest
-- first, each page checked against the exact filter in the same statement
-- (one snapshot), one transaction per page, logging wrong pages and errors,
-- until told to stop; then it says it is done. A check during which the
-- partition set changed (partition_changes moved, or a change had not
-- yet returned when it began) is not judged.
DO $$
DECLARE
    cur text;
    page text[];
    plain text[];
    oracle text[];
    f jsonb;
    begun int;
    settled int;
BEGIN
    LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM searcher_stop);
        f := (ARRAY['{"env": "prod"}', '{"env": "staging", "ack": true}', '{"rare": "needle"}', '{}'])[1 + floor(random() * 4)::int];
        cur := NULL;
        FOR p IN 1..4 LOOP
            BEGIN
                -- alerts_search, the plain query (the custom scan once the
                -- library is loaded) and an oracle the node cannot take (its
                -- scan fenced from the ORDER BY by OFFSET 0)
                SELECT c.begun, c.settled INTO begun, settled FROM partition_changes c;
                SELECT array(SELECT id FROM alerts_search(NULL::p_time, 'ORG_A', f, '-infinity', cur, 200)),
                       array(SELECT id FROM p_time WHERE organisation_id = 'ORG_A' AND attribute_values @> f
                               AND id < coalesce(cur, '8') ORDER BY id DESC LIMIT 200),
                       array(SELECT id FROM (SELECT id FROM p_time WHERE organisation_id = 'ORG_A' AND attribute_values @> f
                               AND id < coalesce(cur, '8') OFFSET 0) o ORDER BY id DESC LIMIT 200)
                INTO page, plain, oracle;
                -- the partition set changed while the statement ran, or
                -- a change had not returned when it began: the sides may
                -- have read different partitions; not judged
                IF (SELECT c.begun FROM partition_changes c) <> begun OR settled <> begun THEN
                    page := oracle;
                    plain := oracle;
                END IF;
                INSERT INTO searcher_log (ok, error) VALUES (page = oracle AND plain = oracle,
                    CASE WHEN page IS DISTINCT FROM oracle OR plain IS DISTINCT FROM oracle THEN
                        format('wrong page (filter %s, below %s): alerts_search %s rows, missing %s, extra %s; plain %s rows, missing %s, extra %s; oracle %s rows',
                               f, cur, cardinality(page),
                               array(SELECT unnest(oracle) EXCEPT SELECT unnest(page)), array(SELECT unnest(page) EXCEPT SELECT unnest(oracle)),
                               cardinality(plain),
                               array(SELECT unnest(oracle) EXCEPT SELECT unnest(plain)), array(SELECT unnest(plain) EXCEPT SELECT unnest(oracle)),
                               cardinality(oracle)) END);
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
