-- CVE-2026-6460: the November 2026 minors (15.20, 16.16, 17.12, 18.7 and
-- later) record a version in each row value, and the server ERRORs before it
-- reads an attribute of a row value formed under an incompatible definition
-- of its type. A PL/pgSQL variable keeps a row from before an ALTER COLUMN
-- TYPE; each path of the extension that reads a row value's attributes must
-- do as Postgres' own `(r).col` does with it: ERROR on a patched server (this
-- file's .out), read the unchanged column on an older one (_1.out). On main
-- (0.3.0) alerts_columns_match ERRORed inside a batch of unguarded calls and
-- the backend aborted.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS alerts;
\set SHOW_CONTEXT never
CREATE TABLE cv_t (id text COLLATE "C" PRIMARY KEY, b text, organisation_id text NOT NULL DEFAULT 'o',
                   attribute_values jsonb NOT NULL DEFAULT '{}');
INSERT INTO cv_t (id, b) VALUES ('01J00000000000000000000001', 'y');

-- Runs q with $1 a row of cv_t read before column b changed type. The block
-- always ends in an exception, which undoes the ALTER, so each call starts
-- from the same table: ZZ001 carries q's result out.
CREATE FUNCTION cv_stale(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r cv_t; s text;
BEGIN
  SELECT * INTO r FROM cv_t LIMIT 1;
  ALTER TABLE cv_t ALTER COLUMN b TYPE integer USING 0;
  EXECUTE q INTO s USING r;
  RAISE EXCEPTION USING ERRCODE = 'ZZ001', MESSAGE = coalesce(s, 'NULL');
EXCEPTION
  WHEN sqlstate 'ZZ001' THEN RETURN sqlerrm;
  WHEN others THEN RETURN sqlstate || ': ' || sqlerrm;
END $$;

-- Postgres' own read of the unchanged column, the oracle
SELECT cv_stale($q$SELECT ($1).id$q$) AS postgres;
-- alerts_columns_match on that column, declared on record and cast to it
SELECT cv_stale($q$SELECT alerts_columns_match($1, '{"id": "01J00000000000000000000001"}')::text$q$) AS columns_match_id;
SELECT cv_stale($q$SELECT alerts_columns_match($1::record, '{"id": "01J00000000000000000000001"}')::text$q$) AS as_record;
-- the backend is alive and a current row reads as before
SELECT alerts_columns_match(t, '{"id": "01J00000000000000000000001", "b": "y"}') AS current FROM cv_t t;
DROP FUNCTION cv_stale(text);
DROP TABLE cv_t;
