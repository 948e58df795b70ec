\set org random(0, 9)
\set k random(0, 199)
DELETE FROM soak WHERE id = (SELECT id FROM soak WHERE organisation_id = 'org' || :org ORDER BY id DESC OFFSET :k LIMIT 1);
