-- The second client of tests/sql/partitioned.sql's "partition attached
-- after a plain query was planned": one statement whose first subquery
-- waits on an advisory lock the test session holds until it has attached
-- a partition; then the plain query (the custom scan searching p_plan
-- whole) and the same rows through Postgres' plan (the scan fenced from
-- the ORDER BY by OFFSET 0). Its pages go to plan_result.
SELECT alerts_format_version() > 0 AS library_loaded;
SET alerts.custom_scan = on;
INSERT INTO plan_result
SELECT CASE WHEN (SELECT pg_advisory_lock_shared(4243) IS NOT NULL) THEN
           array(SELECT id FROM p_plan WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                 ORDER BY id DESC LIMIT 50) END,
       array(SELECT id FROM (SELECT id FROM p_plan WHERE organisation_id = 'ORG_A' AND attribute_values @> '{"env": "prod"}'
                             OFFSET 0) o ORDER BY id DESC LIMIT 50);
