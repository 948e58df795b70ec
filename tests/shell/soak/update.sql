\set org random(0, 9)
\set k random(0, 49)
UPDATE soak SET attribute_values = attribute_values || jsonb_build_object('env', 'e' || (:k % 5), 'svc', 's' || :k, 'updated', true)
WHERE id = (SELECT id FROM soak WHERE organisation_id = 'org' || :org ORDER BY id DESC OFFSET :k LIMIT 1);
