-- Bad input gets a clear ERROR naming the problem and the fix.
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
\set VERBOSITY default
-- attributes that are not an object
SELECT alerts_bloom('[1, 2]');
SELECT alerts_bloom('"team"');
SELECT alerts_bloom('null');
SELECT alerts_attrs_match('42', '{}');
SELECT alerts_attrs_match('[]', '{"a": "b"}');
-- filters that are not objects, or with nulls or nested one-of arrays
SELECT alerts_bloom_match(alerts_bloom('{}'), '["a"]');
SELECT alerts_attrs_match('{}', 'true');
SELECT alerts_bloom_match(alerts_bloom('{}'), '{"a": [["x"]]}');
SELECT alerts_attrs_match('{}', '{"a": null}');
SELECT alerts_attrs_match('{}', '{"a": ["x", null]}');
SELECT alerts_mask('{"a": ["x", "y"]}');
SELECT alerts_mask('3');
-- bitmaps of the wrong length
SELECT alerts_bloom_match(B'1010', '{}');
SELECT alerts_bloom_match(repeat('1', 513)::varbit, '{}');
-- malformed ULIDs
SELECT alerts_ulid_time('');
SELECT alerts_ulid_time('01ARYZ6S41TSV4RRFFQ69G5FA');
SELECT alerts_ulid_time('01ARYZ6S41TSV4RRFFQ69G5FAVV');
SELECT alerts_ulid_time('01ARYZ6S41TSV4RRFFQ69G5FAU');
SELECT alerts_ulid_time('81ARYZ6S41TSV4RRFFQ69G5FAV');
SELECT alerts_ulid_time('01ARYZ6S41TSV4RRFFQ69G5F-V');
SELECT alerts_ulid_floor('infinity');
SELECT alerts_ulid('infinity');
SELECT alerts_ulid_floor('10889-08-02 05:31:50.656+00');
-- deep nesting beyond what the parser accepts is refused cleanly
SELECT alerts_bloom(('{"a": ' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb);
-- the backend is still alive and well after all of that
SELECT alerts_attrs_match('{"a": "b"}', '{"a": "b"}') AS alive;
