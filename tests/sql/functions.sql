-- Every SQL function through SQL, as users call it.
SET client_min_messages = warning;  -- quiet when already installed (tests/shell/upgrade.sh)
CREATE EXTENSION IF NOT EXISTS alerts;
RESET client_min_messages;
SET extra_float_digits = 0;

-- Golden vector: the same bytes the Rust unit test and an independent
-- Python implementation produce (hash format version 1).
SELECT alerts_format_version();
SELECT alerts_bloom('{"team": "t1", "feature": ["alerts", "billing"], "sev": 2}')
     = x'08000000400003000000082000000000000000000000002002000019040c00000000140000000000040008000040400000000000000000044004120800004000'::bit(512) AS golden;
SELECT bit_count(alerts_bloom('{}')) AS empty_bits, length(alerts_bloom('{}')) AS len;
SELECT bit_count(alerts_bloom('{"team": "t1"}')) BETWEEN 1 AND 7 AS one_element_sets_at_most_7_bits;
-- Key order, duplicate keys and number spelling do not change the bitmap.
SELECT alerts_bloom('{"a": 1, "b": "x"}') = alerts_bloom('{"b": "x", "a": 1.000}') AS order_and_number_spelling;
SELECT alerts_bloom('{"a": "y", "a": "x"}') = alerts_bloom('{"a": "x"}') AS last_duplicate_key_wins;
-- Different JSON types are different values.
SELECT alerts_bloom('{"a": "1"}') = alerts_bloom('{"a": 1}') AS string_equals_number;
SELECT alerts_bloom('{"a": true}') = alerts_bloom('{"a": "true"}') AS bool_equals_string;
-- null gives no element; an array gives one per item.
SELECT alerts_bloom('{"a": null, "b": [null]}') = alerts_bloom('{}') AS nulls_give_nothing;
SELECT alerts_bloom('{"f": ["x", "y"]}') = (alerts_bloom('{"f": "x"}') | alerts_bloom('{"f": "y"}')) AS array_is_union;
SELECT alerts_bloom_elements('{"a": 1, "f": ["x", "y", null], "n": null, "o": {"p": [1, 2]}}') AS elements;
-- The native jsonb walk equals the text-path reference on tricky values.
WITH v(a) AS (VALUES
    ('{"n": 1.50, "m": -0.0, "b": [true, false, null, 1e3, 12345678901234567890.000], "o": {"z": [1.0, {"y": "x"}], "a": null}}'::jsonb),
    ('{"s": "ключ", "": "", "arr": [[1, 2.0], {"k": 1}], "esc": "a\"b\\c\n\u0001"}'),
    ('{"big": 1e-20, "neg": -123.4560, "zero": 0.000, "huge": 1e300}'), ('{}'))
SELECT alerts_bloom(a) = alerts_bloom_reference(a) AS native_equals_reference, alerts_bloom_elements(a) AS elements FROM v;
SELECT alerts_attrs_match('{"n": 1.50, "o": {"z": [1.0]}, "arr": [[1, 2.0], {"k": 1}]}', '{"n": 1.5, "o": {"z": [1]}, "arr": {"k": 1.0}}') AS exact_nested;
-- A key containing ':' does not collide with a split elsewhere.
SELECT alerts_bloom('{"a:b": "c"}') = alerts_bloom('{"a": "b:c"}') AS colon_collision;

-- alerts_mask: OR of single-value masks; bitmap & mask = mask as in the article.
SELECT alerts_mask('{}') = alerts_bloom('{}') AS empty_mask;
SELECT alerts_mask('{"team": "t1", "feature": "alerts"}') = (alerts_mask('{"team": "t1"}') | alerts_mask('{"feature": "alerts"}')) AS and_is_union;
WITH r(bm) AS (SELECT alerts_bloom('{"team": "t1", "feature": ["alerts", "billing"]}'))
SELECT (bm & alerts_mask('{"team": "t1", "feature": "billing"}')) = alerts_mask('{"team": "t1", "feature": "billing"}') AS article_test_hit,
       (bm & alerts_mask('{"team": "t2"}')) = alerts_mask('{"team": "t2"}') AS article_test_miss
FROM r;

-- alerts_bloom_match and alerts_attrs_match on a table of cases: the bloom
-- test never says false where the exact test says true.
CREATE TEMP TABLE cases(attrs jsonb, filter jsonb, want boolean);
INSERT INTO cases VALUES
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": "t1"}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": "t2"}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": ["t2", "t1"]}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": []}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"feature": "b"}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"feature": ["c", "a"]}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"feature": "c"}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": "t1", "feature": "a"}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"team": "t1", "feature": "z"}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"sev": 2.0}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"sev": "2"}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"flag": true}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"flag": "true"}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"o": {"x": 1.0}}', true),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"o": {"x": 2}}', false),
  ('{"team": "t1", "feature": ["a", "b"], "sev": 2, "flag": true, "o": {"x": 1}}', '{"missing": "x"}', false),
  ('{"": "", "ключ": "значение", "emoji": "🚨"}', '{"": ""}', true),
  ('{"": "", "ключ": "значение", "emoji": "🚨"}', '{"ключ": "значение", "emoji": ["🚨"]}', true),
  ('{"": "", "ключ": "значение", "emoji": "🚨"}', '{"ключ": "значени"}', false),
  ('{"a:b": "c"}', '{"a": "b:c"}', false),
  ('{"n": null}', '{"n": "null"}', false),
  ('{}', '{}', true),
  ('{}', '{"a": "b"}', false);
SELECT filter, attrs,
       alerts_attrs_match(attrs, filter) AS exact,
       alerts_attrs_match(attrs, filter) = want AS exact_ok,
       (alerts_bloom_match(alerts_bloom(attrs), filter) OR NOT want) AS no_false_negative
FROM cases ORDER BY attrs::text, filter::text;

-- STRICT: SQL NULL in, NULL out.
SELECT alerts_bloom(NULL) IS NULL AS a, alerts_mask(NULL) IS NULL AS b,
       alerts_bloom_match(NULL, '{}') IS NULL AS c, alerts_attrs_match(NULL, '{}') IS NULL AS d,
       alerts_ulid_floor(NULL) IS NULL AS e, alerts_ulid_time(NULL) IS NULL AS f, alerts_ulid(NULL) IS NULL AS g;

-- Extreme but legal input stays exact.
SELECT alerts_attrs_match(jsonb_build_object('big', (SELECT jsonb_agg(i) FROM generate_series(1, 100000) i)), '{"big": 99999}') AS in_100k_array,
       alerts_bloom_match(alerts_bloom(jsonb_build_object('big', (SELECT jsonb_agg(i) FROM generate_series(1, 100000) i))), '{"big": 99999}') AS bloom_100k,
       bit_count(alerts_bloom(jsonb_build_object('big', (SELECT jsonb_agg(i) FROM generate_series(1, 100000) i)))) AS saturated_bits;
SELECT alerts_attrs_match(jsonb_build_object('k', repeat('x', 1000000)), jsonb_build_object('k', repeat('x', 1000000))) AS megabyte_value,
       alerts_attrs_match(jsonb_build_object(repeat('k', 100000), 'v'), jsonb_build_object(repeat('k', 100000), 'v')) AS huge_key;
SELECT alerts_attrs_match('{"n": 12345678901234567890.000}', '{"n": 12345678901234567890}') AS big_numbers_exact,
       alerts_attrs_match('{"n": 12345678901234567891}', '{"n": 12345678901234567890}') AS no_float_rounding;

-- ULIDs
SELECT alerts_ulid_floor('2016-07-30 22:36:16.385+00');
SELECT alerts_ulid_time('01ARYZ6S41TSV4RRFFQ69G5FAV') AT TIME ZONE 'UTC' AS t;
SELECT alerts_ulid_time('01aryz6s41tsv4rrffq69g5fav') AT TIME ZONE 'UTC' AS lowercase;
SELECT alerts_ulid_floor('1970-01-01 00:00:00+00'), alerts_ulid_floor('1960-01-01'), alerts_ulid_floor('-infinity');
SELECT alerts_ulid_time('7ZZZZZZZZZZZZZZZZZZZZZZZZZ') AT TIME ZONE 'UTC' AS last_ulid_time;
SELECT length(alerts_ulid()) AS len, alerts_ulid() ~ '^[0-7][0-9A-HJKMNP-TV-Z]{25}$' AS crockford,
       alerts_ulid() <> alerts_ulid() AS random,
       alerts_ulid_time(alerts_ulid('2020-02-02 02:02:02.002+00')) = '2020-02-02 02:02:02.002+00' AS roundtrip,
       left(alerts_ulid('2020-02-02 02:02:02.002+00'), 10) = left(alerts_ulid_floor('2020-02-02 02:02:02.002+00'), 10) AS floor_prefix;
SELECT alerts_ulid_floor('2020-01-01 00:00:00.0009+00') = alerts_ulid_floor('2020-01-01 00:00:00+00') AS floor_is_per_millisecond,
       alerts_ulid_floor('2020-01-01') COLLATE "C" < alerts_ulid('2020-01-01') COLLATE "C" AS floor_sorts_first;

-- Narrower bitmap columns hold the bitmap folded: bit p of the 512 is bit
-- p mod W of bit(W). Checked against the fold written in SQL, on the rows of
-- 200 generated attribute objects; the folded masks and tests agree, and a
-- folded test never says no where the exact test says yes.
CREATE TEMP TABLE fold_rows AS
SELECT jsonb_build_object('team', 't' || (g % 13), 'n', g % 7, 'tags', jsonb_build_array('a' || (g % 5), 'b' || (g % 3))) AS a,
       jsonb_build_object('team', 't' || (g % 11)) AS f
FROM generate_series(1, 200) g;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE alerts_bloom(a, 512) = alerts_bloom(a)) AS same_512,
       count(*) FILTER (WHERE alerts_bloom(a, 256) = substring(alerts_bloom(a) FROM 1 FOR 256) | substring(alerts_bloom(a) FROM 257 FOR 256)) AS fold_256,
       count(*) FILTER (WHERE alerts_bloom(a, 128) = substring(alerts_bloom(a) FROM 1 FOR 128) | substring(alerts_bloom(a) FROM 129 FOR 128)
                                                   | substring(alerts_bloom(a) FROM 257 FOR 128) | substring(alerts_bloom(a) FROM 385 FOR 128)) AS fold_128,
       count(*) FILTER (WHERE alerts_mask(f, 256) = substring(alerts_mask(f) FROM 1 FOR 256) | substring(alerts_mask(f) FROM 257 FOR 256)) AS mask_256,
       count(*) FILTER (WHERE alerts_bloom_match(alerts_bloom(a, 256), f) = (alerts_bloom(a, 256) & alerts_mask(f, 256) = alerts_mask(f, 256))) AS test_is_mask_256,
       count(*) FILTER (WHERE alerts_bloom_match(alerts_bloom(a, 128), f) = (alerts_bloom(a, 128) & alerts_mask(f, 128) = alerts_mask(f, 128))) AS test_is_mask_128,
       count(*) FILTER (WHERE alerts_attrs_match(a, f)) AS exact,
       count(*) FILTER (WHERE alerts_attrs_match(a, f) AND NOT (alerts_bloom_match(alerts_bloom(a, 128), f) AND alerts_bloom_match(alerts_bloom(a, 256), f))) AS false_negatives,
       count(*) FILTER (WHERE alerts_bloom_match(alerts_bloom(a), f) AND NOT alerts_bloom_match(alerts_bloom(a, 128), f)) AS folding_said_no_to_a_maybe
FROM fold_rows;
SELECT length(alerts_bloom('{}', 128)) AS len_128, bit_count(alerts_bloom('{}', 256)) AS empty_256,
       alerts_bloom_match(alerts_bloom('{"team": ["t1", "t2"]}', 128), '{"team": ["t9", "t2"]}') AS one_of_128,
       alerts_bloom_match(alerts_bloom('{"team": "t1"}', 256), '{"team": []}') AS empty_one_of_256;
SELECT alerts_bloom('{}', 64);
SELECT alerts_mask('{"a": "b"}', 500);
SELECT alerts_bloom_match(B'1010', '{}');
SELECT alerts_bloom_match(repeat('0', 255)::varbit, '{}');
DROP TABLE fold_rows;

-- A jsonb value's stored form (a Citus routed page's jsonb columns): the
-- value's bytes detoasted (a stored value is smaller: a short header, or
-- compressed), the same as the value's own bytes in memory.
CREATE TEMP TABLE jsonb_forms (j jsonb);
INSERT INTO jsonb_forms VALUES ('{"team": ["t1", "t2"], "n": 1.5, "s": null}'),
  ((SELECT jsonb_object_agg('k' || g, repeat('v', 50) || g) FROM generate_series(1, 400) g));
SELECT length(alerts_jsonb_bytes(j)) + 4 = pg_column_size(j::text::jsonb) AS whole_value,
       pg_column_size(j) < pg_column_size(j::text::jsonb) AS stored_smaller,
       alerts_jsonb_bytes(j) = alerts_jsonb_bytes(j::text::jsonb) AS same_bytes
FROM jsonb_forms ORDER BY 2;
SELECT alerts_jsonb_bytes(NULL) IS NULL AS strict;
DROP TABLE jsonb_forms;

-- Every object is commented and correctly marked.
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile, p.proisstrict, p.proparallel,
       p.procost, obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented, p.prosecdef
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'alerts'
ORDER BY 1, 2;
