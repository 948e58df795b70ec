SET client_min_messages = warning;
CREATE EXTENSION alerts;
CREATE EXTENSION amcheck;
CREATE TABLE soak (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
                   attribute_values jsonb NOT NULL);
INSERT INTO soak (id, organisation_id, attribute_values)
SELECT alerts_ulid(now() - g * interval '1 second'), 'org' || (g % 10),
       jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 50), 'n', g % 7, 'src', 'seed')
FROM generate_series(1, 200000) g;
CALL alerts_enable('soak');
CREATE INDEX soak_page ON soak (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX soak_gin ON soak USING gin (attribute_values jsonb_path_ops);
-- alerts_search prefers the tenant-keys index for rare filters
CREATE INDEX soak_keys ON soak USING gin (alerts_keys(organisation_id, id, attribute_values));
VACUUM ANALYZE soak;
-- filters by number, each beside its exact oracle: a predicate of plain
-- jsonb containment (a one-of filter is an OR of containments)
CREATE TABLE soak_filters (f int PRIMARY KEY, filter jsonb, oracle text);
INSERT INTO soak_filters VALUES
  (0, '{"env": "e1"}', $$attribute_values @> '{"env": "e1"}'$$),
  (1, '{"svc": "s7"}', $$attribute_values @> '{"svc": "s7"}'$$),
  (2, '{"env": ["e2", "e3"], "n": 4}', $$(attribute_values @> '{"env": "e2", "n": 4}' OR attribute_values @> '{"env": "e3", "n": 4}')$$),
  (3, '{"updated": true}', $$attribute_values @> '{"updated": true}'$$),
  (4, '{"svc": "s49", "src": "insert"}', $$attribute_values @> '{"svc": "s49", "src": "insert"}'$$),
  (5, '{"env": "missing"}', $$attribute_values @> '{"env": "missing"}'$$);
-- Both pages are read in one statement, so in one snapshot.
CREATE FUNCTION soak_check(org text, f int, size int) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    got text[];
    plain text[];
    want text[];
    flt jsonb;
    orc text;
    bad text;
BEGIN
    SELECT filter, oracle INTO flt, orc FROM soak_filters WHERE soak_filters.f = soak_check.f;
    -- alerts_search, the plain query (the custom scan once the library is
    -- loaded) and the oracle, which the node cannot take (its scan is
    -- fenced from the ORDER BY): one statement, one snapshot
    EXECUTE format(
        'SELECT array(SELECT id FROM alerts_search(NULL::soak, $1, $2, now() - interval ''30 days'', NULL, $3)),
                array(SELECT id FROM soak WHERE organisation_id = $1 AND id >= alerts_ulid_floor(now() - interval ''30 days'')
                        AND %s ORDER BY id DESC LIMIT $3),
                array(SELECT id FROM (SELECT id FROM soak WHERE organisation_id = $1 AND id >= alerts_ulid_floor(now() - interval ''30 days'')
                        AND %s OFFSET 0) o ORDER BY id DESC LIMIT $3)', orc, orc)
    INTO got, plain, want USING org, flt, size;
    FOREACH bad IN ARRAY ARRAY['alerts_search', 'plain SQL'] LOOP
        IF (CASE bad WHEN 'alerts_search' THEN got ELSE plain END) IS DISTINCT FROM want THEN
            got := CASE bad WHEN 'alerts_search' THEN got ELSE plain END;
            RAISE EXCEPTION 'soak: % (%, %, page %) returned % rows, the exact filter % (first difference at %: % against %)',
                bad, org, flt, size, cardinality(got), cardinality(want),
                (SELECT min(i) FROM generate_series(1, greatest(cardinality(got), cardinality(want))) i WHERE got[i] IS DISTINCT FROM want[i]),
                (SELECT got[min(i)] FROM generate_series(1, greatest(cardinality(got), cardinality(want))) i WHERE got[i] IS DISTINCT FROM want[i]),
                (SELECT want[min(i)] FROM generate_series(1, greatest(cardinality(got), cardinality(want))) i WHERE got[i] IS DISTINCT FROM want[i]);
        END IF;
    END LOOP;
    RETURN true;
END $$;
