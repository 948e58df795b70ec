-- The bitmap column kept current by the trigger, and by a generated column.
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
CREATE TABLE alerts_t (
    id text COLLATE "C" PRIMARY KEY DEFAULT alerts_ulid(),
    organisation_id text NOT NULL DEFAULT 'org',
    attribute_values jsonb NOT NULL DEFAULT '{}',
    attribute_values_bitmap bit(512)
);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON alerts_t
    FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE VIEW drift AS
    SELECT count(*) AS rows,
           count(*) FILTER (WHERE attribute_values_bitmap IS DISTINCT FROM alerts_bloom(attribute_values)) AS wrong
    FROM alerts_t;

-- INSERT, including an explicit wrong bitmap, which the trigger overwrites.
INSERT INTO alerts_t (id, attribute_values) VALUES ('A1', '{"team": "t1"}'), ('A2', '{"team": "t2", "f": ["x", "y"]}');
INSERT INTO alerts_t (id, attribute_values, attribute_values_bitmap) VALUES ('A3', '{"team": "t3"}', repeat('1', 512)::bit(512));
SELECT * FROM drift;
-- UPDATE of the attributes, and a direct write to the bitmap.
UPDATE alerts_t SET attribute_values = '{"team": "t9"}' WHERE id = 'A1';
UPDATE alerts_t SET attribute_values_bitmap = B'0'::bit(512) | repeat('1', 512)::bit(512) WHERE id = 'A2';
SELECT * FROM drift;
SELECT id FROM alerts_t WHERE alerts_bloom_match(attribute_values_bitmap, '{"team": "t9"}') AND alerts_attrs_match(attribute_values, '{"team": "t9"}');
-- COPY
COPY alerts_t (id, attribute_values) FROM stdin;
C1	{"team": "c1", "f": ["a"]}
C2	{"team": "c2"}
\.
SELECT * FROM drift;
-- INSERT ... ON CONFLICT DO UPDATE: the update path fires the trigger too.
INSERT INTO alerts_t (id, attribute_values) VALUES ('C1', '{"team": "upserted"}')
    ON CONFLICT (id) DO UPDATE SET attribute_values = EXCLUDED.attribute_values;
INSERT INTO alerts_t (id, attribute_values) VALUES ('C2', '{"team": "ignored"}') ON CONFLICT (id) DO NOTHING;
SELECT id, attribute_values FROM alerts_t WHERE id LIKE 'C%' ORDER BY id;
SELECT * FROM drift;
-- A failing trigger aborts the statement: nothing half-written.
INSERT INTO alerts_t (id, attribute_values) VALUES ('B1', '{"ok": 1}'), ('B2', '["not", "an", "object"]');
SELECT count(*) AS b_rows FROM alerts_t WHERE id LIKE 'B%';
UPDATE alerts_t SET attribute_values = '7' WHERE id = 'A1';
SELECT attribute_values FROM alerts_t WHERE id = 'A1';
SELECT * FROM drift;

-- Column names as trigger arguments; NULL attributes give a NULL bitmap.
CREATE TABLE custom (k int, attrs jsonb, bm bit(512));
CREATE TRIGGER custom_bloom BEFORE INSERT OR UPDATE ON custom
    FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('attrs', 'bm');
INSERT INTO custom VALUES (1, '{"a": "b"}', NULL), (2, NULL, repeat('1', 512)::bit(512));
SELECT k, bm IS NOT DISTINCT FROM alerts_bloom(attrs) AS in_step, bm IS NULL AS bm_null FROM custom ORDER BY k;
-- bit varying works too
CREATE TABLE vb (attribute_values jsonb, attribute_values_bitmap varbit);
CREATE TRIGGER vb_bloom BEFORE INSERT ON vb FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO vb VALUES ('{"a": 1}', B'1');
SELECT length(attribute_values_bitmap), attribute_values_bitmap = alerts_bloom(attribute_values) AS in_step FROM vb;

-- Misconfigured triggers fail with the fix in the hint.
CREATE TABLE bad (attribute_values jsonb, attribute_values_bitmap bit(512), txt text, short bit(64));
CREATE TRIGGER t1 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('nope');
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t1 ON bad;
CREATE TRIGGER t2 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('txt');
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t2 ON bad;
CREATE TRIGGER t3 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('attribute_values', 'short');
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t3 ON bad;
CREATE TRIGGER t4 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('attribute_values', 'txt');
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t4 ON bad;
CREATE TRIGGER t5 AFTER INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t5 ON bad;
CREATE TRIGGER t6 BEFORE INSERT ON bad FOR EACH STATEMENT EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t6 ON bad;
CREATE TRIGGER t7 BEFORE DELETE ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO bad (attribute_values) VALUES ('{}');
DELETE FROM bad;
DROP TRIGGER t7 ON bad;
CREATE TRIGGER t8 BEFORE INSERT ON bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger('a', 'b', 'c');
INSERT INTO bad (attribute_values) VALUES ('{}');
DROP TRIGGER t8 ON bad;
SELECT alerts_bloom_trigger();
SELECT count(*) AS rows_in_bad FROM bad;

-- The generated-column form: alerts_bloom is IMMUTABLE, so STORED works.
CREATE TABLE gen (
    id text COLLATE "C" PRIMARY KEY,
    attribute_values jsonb NOT NULL,
    attribute_values_bitmap bit(512) GENERATED ALWAYS AS (alerts_bloom(attribute_values)) STORED
);
INSERT INTO gen (id, attribute_values) VALUES ('G1', '{"team": "t1"}'), ('G2', '{"team": "t2"}');
COPY gen (id, attribute_values) FROM stdin;
G3	{"team": "t3"}
\.
UPDATE gen SET attribute_values = '{"team": "t4"}' WHERE id = 'G1';
INSERT INTO gen (id, attribute_values) VALUES ('G2', '{"team": "t5"}') ON CONFLICT (id) DO UPDATE SET attribute_values = EXCLUDED.attribute_values;
SELECT id, attribute_values_bitmap = alerts_bloom(attribute_values) AS in_step FROM gen ORDER BY id;
INSERT INTO gen (id, attribute_values, attribute_values_bitmap) VALUES ('G9', '{}', B'0'::bit(512));
INSERT INTO gen (id, attribute_values) VALUES ('G9', '[]');
SELECT count(*) FROM gen;

-- Narrower columns: the trigger and a generated column write the bitmap
-- folded to the column's width; any other width is refused by name.
CREATE TABLE narrow (id text PRIMARY KEY, attribute_values jsonb, attribute_values_bitmap bit(256),
                     b128 bit(128) GENERATED ALWAYS AS (alerts_bloom(attribute_values, 128)) STORED);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON narrow FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO narrow (id, attribute_values) VALUES ('N1', '{"team": "t1", "f": ["x", "y"]}'), ('N2', '{}'), ('N3', NULL);
UPDATE narrow SET attribute_values = '{"team": "t2"}' WHERE id = 'N2';
SELECT id, length(attribute_values_bitmap) AS len, attribute_values_bitmap = alerts_bloom(attribute_values, 256) AS in_step_256,
       b128 = alerts_bloom(attribute_values, 128) AS in_step_128,
       alerts_bloom_match(attribute_values_bitmap, '{"team": "t2"}') AS t2_256, alerts_bloom_match(b128, '{"team": "t2"}') AS t2_128
FROM narrow ORDER BY id;
CREATE TABLE narrow_bad (id text, attribute_values jsonb, attribute_values_bitmap bit(100));
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON narrow_bad FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
INSERT INTO narrow_bad (id, attribute_values) VALUES ('X', '{}');
DROP TABLE narrow, narrow_bad;
