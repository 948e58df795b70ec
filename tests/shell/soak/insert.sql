\set org random(0, 9)
\set k random(0, 49)
INSERT INTO soak (id, organisation_id, attribute_values)
VALUES (alerts_ulid(), 'org' || :org, jsonb_build_object('env', 'e' || (:k % 5), 'svc', 's' || :k, 'n', :k % 7, 'src', 'insert'));
