-- Security: every function, the trigger and the procedures behave the same
-- under a hostile search_path, and a non-superuser who owns a table can use
-- everything (the extension is trusted; no function is SECURITY DEFINER).
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
\set SHOW_CONTEXT never

CREATE TABLE sec (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL DEFAULT '{}',
                  attribute_values_bitmap bit(512));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON sec FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
ALTER TABLE sec ENABLE ALWAYS TRIGGER alerts_bloom;
CREATE INDEX sec_page ON sec (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO sec (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'org' || (g % 3),
       jsonb_build_object('env', 'e' || (g % 5), 'n', g % 7)
FROM generate_series(1, 3000) g;
-- What the answers are under a sane search_path.
CREATE TABLE sec_expected AS
SELECT f, array(SELECT id FROM alerts_search(NULL::sec, 'org1', f::jsonb, '-infinity', NULL, 40)) AS ids
FROM unnest(ARRAY['{"env": "e1"}', '{"env": ["e2", "e3"], "n": 4}', '{}', '{"env": "none"}']) f;
-- A copy whose statements are first prepared under the hostile path below
-- (a search connects to SPI and pins search_path only at its first
-- statement); its answers from plain SQL.
CREATE TABLE sec_fresh AS SELECT * FROM sec;
CREATE INDEX ON sec_fresh (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE TABLE sec_fresh_expected AS
SELECT f, array(SELECT id FROM sec_fresh WHERE organisation_id = 'org1' AND alerts_attrs_match(attribute_values, f::jsonb)
                ORDER BY id DESC LIMIT 40) AS ids
FROM unnest(ARRAY['{"env": "e1"}', '{"env": ["e2", "e3"], "n": 4}', '{}', '{"env": "none"}']) f;
CREATE TABLE sec_bitmaps AS SELECT alerts_bloom('{"env": "e1", "n": 1}') AS b, alerts_mask('{"env": "e1"}') AS m;

-- A schema that shadows operators and functions the extension uses: text
-- equality and comparisons that are always true, a jsonb containment that is
-- always true, and look-alikes of the extension's own functions.
CREATE SCHEMA evil;
CREATE FUNCTION evil.yes(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION evil.yes_j(jsonb, jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.yes);
CREATE OPERATOR evil.>= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.yes);
CREATE OPERATOR evil.< (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.yes);
CREATE OPERATOR evil.@> (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = evil.yes_j);
CREATE FUNCTION evil.alerts_bloom(jsonb) RETURNS bit(512) LANGUAGE sql IMMUTABLE AS $$SELECT repeat('1', 512)::bit(512)$$;
CREATE FUNCTION evil.alerts_bloom_match(bit, jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION evil.alerts_attrs_match(jsonb, jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT 'SELECT 1/0'$$;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$SELECT timestamptz '2000-01-01'$$;
SET search_path = evil, pg_catalog, public;

-- Searches: the same pages, with and without GIN.
SELECT e.f, array(SELECT id FROM public.alerts_search(NULL::public.sec, 'org1', e.f::jsonb, '-infinity', NULL, 40)) OPERATOR(pg_catalog.=) e.ids AS same
FROM public.sec_expected e ORDER BY e.f;
CREATE INDEX sec_gin ON public.sec USING gin (attribute_values jsonb_path_ops);
SELECT e.f, array(SELECT id FROM public.alerts_search(NULL::public.sec, 'org1', e.f::jsonb, '-infinity', NULL, 40)) OPERATOR(pg_catalog.=) e.ids AS same
FROM public.sec_expected e ORDER BY e.f;
DROP INDEX public.sec_gin;
SELECT e.f, array(SELECT id FROM public.alerts_search(NULL::public.sec_fresh, 'org1', e.f::jsonb, '-infinity', NULL, 40)) OPERATOR(pg_catalog.=) e.ids AS same
FROM public.sec_fresh_expected e ORDER BY e.f;
-- The C functions called by their qualified names, the trigger on insert.
SELECT public.alerts_bloom('{"env": "e1", "n": 1}') OPERATOR(pg_catalog.=) b AS bloom_same,
       public.alerts_mask('{"env": "e1"}') OPERATOR(pg_catalog.=) m AS mask_same
FROM public.sec_bitmaps;
INSERT INTO public.sec (id, organisation_id, attribute_values) VALUES (public.alerts_ulid(), 'org1', '{"env": "e1", "n": 1}');
SELECT pg_catalog.count(*) AS rows, pg_catalog.bool_and(s.attribute_values_bitmap OPERATOR(pg_catalog.=) b.b) AS trigger_bitmaps_same
FROM public.sec s, public.sec_bitmaps b WHERE s.attribute_values OPERATOR(pg_catalog.=) '{"env": "e1", "n": 1}'::jsonb;
-- The plpgsql functions and procedures.
SELECT rows, rows_without_bitmap, stale_bitmaps, advice FROM public.alerts_bloom_stats('public.sec');
SET client_min_messages = warning;
CALL public.alerts_rebuild('public.sec');
CALL public.alerts_disable('public.sec');
CALL public.alerts_enable('public.sec');
RESET client_min_messages;
SELECT public.alerts_index_command('public.sec');
RESET search_path;
SELECT count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)) AS wrong_bitmaps FROM sec;
DROP SCHEMA evil CASCADE;

-- No function of the extension runs with its owner's rights.
SELECT count(*) AS security_definer_functions
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'alerts') AND p.prosecdef;

-- A role with no special rights owns a table and uses everything.
DROP ROLE IF EXISTS alerts_tenant;
CREATE ROLE alerts_tenant LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
GRANT CREATE ON SCHEMA public TO alerts_tenant;
SET ROLE alerts_tenant;
CREATE TABLE tenant_alerts (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL);
INSERT INTO tenant_alerts SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'o', jsonb_build_object('k', g % 4)
FROM generate_series(1, 2000) g;
SET client_min_messages = warning;
CALL alerts_enable('tenant_alerts');
RESET client_min_messages;
SELECT alerts_index_command('tenant_alerts') \gexec
INSERT INTO tenant_alerts VALUES (alerts_ulid(), 'o', '{"k": 9}');
SELECT count(*) AS found FROM alerts_search(NULL::tenant_alerts, 'o', '{"k": [2, 9]}', '-infinity', NULL, 1000);
SELECT rows, stale_bitmaps, advice FROM alerts_bloom_stats('tenant_alerts');
SET client_min_messages = warning;
CALL alerts_rebuild('tenant_alerts');
RESET client_min_messages;
CALL alerts_disable('tenant_alerts');
-- ...but not on a table it does not own.
CALL alerts_enable('sec');
CALL alerts_disable('sec');
RESET ROLE;
DROP TABLE tenant_alerts;

-- alerts_search reads a table with the caller's rights, as a query would:
-- without SELECT on it, the permission error; under row-level security, the
-- policy's rows only (the direct index walk steps aside for the statement
-- walk, where the executor applies policies); its owner, not subject to the
-- policy, sees every row.
SELECT alerts_index_command('sec') \gexec
\set VERBOSITY terse
SET ROLE alerts_tenant;
SELECT count(*) FROM alerts_search(NULL::sec, 'org1', '{}', '-infinity', NULL, 10);
RESET ROLE;
\set VERBOSITY default
GRANT SELECT ON sec TO alerts_tenant;
ALTER TABLE sec ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_no_e1 ON sec FOR SELECT TO alerts_tenant USING (attribute_values->>'env' <> 'e1');
SET ROLE alerts_tenant;
SELECT count(*) AS e1_rows_seen FROM alerts_search(NULL::sec, 'org1', '{"env": "e1"}', '-infinity', NULL, 1000);
SELECT array(SELECT id FROM alerts_search(NULL::sec, 'org1', '{}', '-infinity', NULL, 1000))
     = array(SELECT id FROM sec WHERE organisation_id = 'org1' ORDER BY id DESC) AS policy_rows_exact,
       (SELECT count(*) FROM alerts_search(NULL::sec, 'org1', '{}', '-infinity', NULL, 1000)) AS rows_seen;
RESET ROLE;
SELECT count(*) AS owner_sees_e1 FROM alerts_search(NULL::sec, 'org1', '{"env": "e1"}', '-infinity', NULL, 1000);
DROP POLICY sec_no_e1 ON sec;
ALTER TABLE sec DISABLE ROW LEVEL SECURITY;
REVOKE SELECT ON sec FROM alerts_tenant;

-- The extension is trusted: a database owner without superuser can install it.
DROP DATABASE IF EXISTS alerts_trusted;
CREATE DATABASE alerts_trusted OWNER alerts_tenant;
-- A second connection, as that owner (\c; no dblink, which not every
-- server build ships).
\set home_db :DBNAME
\set home_user :USER
\c alerts_trusted alerts_tenant
CREATE EXTENSION alerts;
SELECT rolsuper AS superuser FROM pg_roles WHERE rolname = current_user;
SELECT alerts_bloom_match(alerts_bloom('{"a": 1}'), '{"a": 1}') AS works;
\c :home_db :home_user
DROP DATABASE alerts_trusted;
REVOKE CREATE ON SCHEMA public FROM alerts_tenant;
DROP ROLE alerts_tenant;
DROP TABLE sec, sec_expected, sec_bitmaps;
