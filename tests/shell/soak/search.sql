-- a page through alerts_search must equal the exact filter in the same
-- snapshot, or soak_check raises and pgbench counts a failed transaction
\set org random(0, 9)
\set f random(0, 5)
\set size random(1, 120)
SELECT soak_check('org' || :org, :f, :size);
