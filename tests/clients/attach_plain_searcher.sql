-- The second client of tests/sql/plain_tables.sql's "a partition attached
-- while a plain query reads the table in pages": one plain query of
-- p_attach (every match, newest first: pages of 50 rows, then 100), in
-- the role and with the gate the test session set in attach_how (a qual
-- or p_attach's policy, each waiting on an advisory lock the test session
-- holds until it has attached a partition); what it ended with goes to
-- attach_result.
SELECT set_config('role', (SELECT who FROM attach_how), false);
DO $$
DECLARE
    n bigint;
BEGIN
    IF (SELECT gate_in_query FROM attach_how) THEN
        SELECT count(*) INTO n FROM (SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                                     AND attach_wait() ORDER BY id DESC) s;
    ELSE
        SELECT count(*) INTO n FROM (SELECT id FROM p_attach WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                                     ORDER BY id DESC) s;
    END IF;
    INSERT INTO attach_result VALUES (format('%s rows', n));
EXCEPTION WHEN serialization_failure THEN
    INSERT INTO attach_result VALUES (SQLSTATE || ': ' || SQLERRM);
END $$;
