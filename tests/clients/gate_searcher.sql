-- The second client of tests/sql/partitioned.sql's "partition attached
-- while a call runs": one alerts_search call on p_gate as a role under
-- p_gate's policy, whose check waits on an advisory lock the test session
-- holds until it has attached a partition; the page goes to gate_result.
SET ROLE regress_alerts_gate;
INSERT INTO gate_result
SELECT array(SELECT id FROM alerts_search(NULL::p_gate, 'ORG_A', '{"env": "prod"}', '-infinity', NULL, 50));
