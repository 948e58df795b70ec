-- Security across roles (docs/security.md): a search reads exactly what the
-- caller's own SELECT could read. Each case failed on main before the fix:
-- 1. USAGE on the table's schema is checked when the table comes from a
--    row value's type (a view hands out NULL::private.t);
-- 2. a function planted in the extension's schema, an overload that an
--    exact argument-type match would have preferred to the extension's own,
--    never runs inside a search or a procedure: the call ERRORs and names it;
--    one planted in pg_temp is never reached;
-- 3. the route memory of rare filters is per role: under a pooler's
--    SET ROLE, one role's EXPLAIN ANALYZE shows nothing of another's search.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
CREATE EXTENSION IF NOT EXISTS alerts;
LOAD 'alerts';
\set SHOW_CONTEXT never
DROP ROLE IF EXISTS sr_app;
DROP ROLE IF EXISTS sr_planter;
DROP ROLE IF EXISTS sr_other;
-- (BYPASSRLS: the table's policy, for sr_app only, would deny it every row)
CREATE ROLE sr_other NOSUPERUSER BYPASSRLS;
CREATE ROLE sr_app NOSUPERUSER;
CREATE ROLE sr_planter NOSUPERUSER;

-- 1. Schema USAGE.
CREATE SCHEMA sr_private;
CREATE TABLE sr_private.t (id text COLLATE "C" PRIMARY KEY, organisation_id text COLLATE "C" NOT NULL,
                           attribute_values jsonb NOT NULL DEFAULT '{}', attribute_values_bitmap bit(128));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON sr_private.t FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX ON sr_private.t (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
INSERT INTO sr_private.t (id, organisation_id, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'org1', jsonb_build_object('n', g % 5)
FROM generate_series(1, 200) g;
GRANT SELECT ON sr_private.t TO sr_app;
CREATE VIEW sr_handle AS SELECT NULL::sr_private.t AS r;
GRANT SELECT ON sr_handle TO sr_app;
\set VERBOSITY terse
SET ROLE sr_app;
SELECT count(*) FROM sr_private.t;
SELECT count(*) FROM sr_handle v, LATERAL alerts_search(v.r, 'org1', '{}', '-infinity', NULL, 1000);
SELECT count(*) FROM sr_handle v, LATERAL alerts_search(v.r, 'org1', '{"n": 1}', '-infinity', NULL, 1000);
RESET ROLE;
GRANT USAGE ON SCHEMA sr_private TO sr_app;
SET ROLE sr_app;
SELECT count(*) AS with_usage FROM sr_handle v, LATERAL alerts_search(v.r, 'org1', '{}', '-infinity', NULL, 1000);
RESET ROLE;
\set VERBOSITY default

-- 2. Planted overloads. The application role reads its table under a
-- row-level policy; the planter may create in the extension's schema
-- (public keeps CREATE for everyone in databases made before 15) and
-- collects what its functions see.
CREATE TABLE sr_t (id varchar COLLATE "C" PRIMARY KEY, organisation_id varchar COLLATE "C" NOT NULL,
                   priority int NOT NULL DEFAULT 1,
                   attribute_values jsonb NOT NULL DEFAULT '{}', attribute_values_bitmap bit(128));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON sr_t FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX sr_t_page ON sr_t (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX sr_t_keys ON sr_t USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO sr_t (id, organisation_id, priority, attribute_values)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), CASE WHEN g % 2 = 0 THEN 'victim' ELSE 'mine' END,
       g % 3, jsonb_build_object('n', g % 7) || CASE WHEN g % 5000 = 4 THEN '{"svc": "rare"}' ELSE '{}' END::jsonb
FROM generate_series(1, 20000) g;
ANALYZE sr_t;
GRANT SELECT ON sr_t TO sr_app, sr_other;
ALTER TABLE sr_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY sr_mine ON sr_t FOR SELECT TO sr_app USING (organisation_id = 'mine');
CREATE TABLE sr_loot (what text, id text);
GRANT INSERT, SELECT ON sr_loot TO PUBLIC;
GRANT CREATE ON SCHEMA public TO sr_planter;
SET ROLE sr_planter;
CREATE FUNCTION public.alerts_columns_match(r public.sr_t, c jsonb) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO public.sr_loot VALUES ('columns_match', r.id); SELECT true $$;
RESET ROLE;
SELECT (SELECT count(*) FROM pg_proc WHERE proname = 'alerts_columns_match') AS overloads;
\set VERBOSITY terse
SET ROLE sr_app;
SELECT count(*) FROM alerts_search(NULL::sr_t, 'mine', '{}', '-infinity', NULL, 10, columns => '{"priority": 1}');
SELECT count(*) FROM alerts_search(NULL::sr_t, 'mine', '{"n": 2}', '-infinity', NULL, 10);
RESET ROLE;
-- the procedures refuse too
CALL alerts_rebuild('sr_t');
\set VERBOSITY default
SELECT count(*) AS rows_copied FROM sr_loot;
DROP FUNCTION public.alerts_columns_match(public.sr_t, jsonb);
-- the other functions a search calls, on a varchar id
SET ROLE sr_planter;
CREATE FUNCTION public.alerts_search_probe(varchar, bit, jsonb) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO public.sr_loot VALUES ('probe', $1); SELECT true $$;
RESET ROLE;
\set VERBOSITY terse
SET ROLE sr_app;
SELECT count(*) FROM alerts_search(NULL::sr_t, 'mine', '{"n": 2}', '-infinity', NULL, 10);
RESET ROLE;
\set VERBOSITY default
DROP FUNCTION public.alerts_search_probe(varchar, bit, jsonb);
SET ROLE sr_planter;
CREATE FUNCTION public.alerts_keys(varchar, varchar, jsonb) RETURNS bigint[] LANGUAGE sql IMMUTABLE
    AS $$ SELECT '{}'::bigint[] $$;
RESET ROLE;
\set VERBOSITY terse
SET ROLE sr_app;
SELECT count(*) FROM alerts_search(NULL::sr_t, 'mine', '{"svc": "rare"}', '-infinity', NULL, 10);
RESET ROLE;
\set VERBOSITY default
DROP FUNCTION public.alerts_keys(varchar, varchar, jsonb);
-- in pg_temp (shared by the roles of one backend): never reached
CREATE FUNCTION pg_temp.alerts_columns_match(r public.sr_t, c jsonb) RETURNS boolean LANGUAGE sql VOLATILE
    AS $$ INSERT INTO public.sr_loot VALUES ('temp', r.id); SELECT true $$;
SET ROLE sr_app;
SELECT array(SELECT id FROM alerts_search(NULL::sr_t, 'mine', '{"n": 2}', '-infinity', NULL, 20, columns => '{"priority": 1}'))
     = array(SELECT id FROM sr_t WHERE organisation_id = 'mine' AND attribute_values @> '{"n": 2}' AND priority = 1
             ORDER BY id DESC LIMIT 20) AS exact_with_temp_overload;
RESET ROLE;
SELECT count(*) AS rows_copied FROM sr_loot;
DROP FUNCTION pg_temp.alerts_columns_match(public.sr_t, jsonb);
REVOKE CREATE ON SCHEMA public FROM sr_planter;

-- 3. Route memory per role, as a pooler runs it: the table's owner pages
-- the victim tenant with a rare filter (remembered as rare); then another
-- role explains the same page: its first walk is its own, not the owner's
-- memory (which told it that the owner had searched that filter lately).
-- The application role, under its policy, gets Postgres' own plan.
CREATE FUNCTION sr_route(f jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format('EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF) SELECT id FROM public.sr_t WHERE organisation_id = %L AND attribute_values @> %L ORDER BY id DESC LIMIT 10',
                   'victim', f) INTO plan;
    RETURN coalesce(jsonb_path_query_first(plan, '$.**."Routes Taken"') #>> '{}', 'no route (not the custom scan)');
END $$;
SELECT count(*) AS victim_rows FROM alerts_search(NULL::sr_t, 'victim', '{"svc": "rare"}', '-infinity', NULL, 10);
SELECT sr_route('{"svc": "rare"}') AS owner_again;
SET ROLE sr_other;
SELECT sr_route('{"svc": "rare"}') AS other_role_first;
SELECT sr_route('{"svc": "rare"}') AS other_role_again;
RESET ROLE;
SET ROLE sr_app;
SELECT sr_route('{"svc": "rare"}') AS app_role;
SELECT count(*) AS victim_rows FROM sr_t WHERE organisation_id = 'victim';
RESET ROLE;

DROP TABLE sr_t, sr_loot, sr_private.t CASCADE;
DROP FUNCTION sr_route(jsonb);
DROP VIEW IF EXISTS sr_handle;
DROP SCHEMA sr_private;
DROP ROLE sr_app;
DROP ROLE sr_planter;
DROP ROLE sr_other;
