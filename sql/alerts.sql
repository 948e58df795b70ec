-- alerts: bloom bitmaps over JSONB alert attributes.
--
-- Every object is written here by hand (the Rust functions are raw V1 C
-- functions), so volatility, strictness, parallel safety, COST and comments
-- are explicit. Internals refer to each other through @extschema@ so that a
-- hostile search_path cannot redirect them.

CREATE FUNCTION alerts_match_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'alerts_match_support'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_match_support(internal) IS
    'Planner support for alerts_bloom_match and alerts_attrs_match: selectivity estimates that keep LIMIT queries on the pagination index walk, also with generic plans.';

CREATE FUNCTION alerts_bloom(attrs jsonb) RETURNS bit(512)
    AS 'MODULE_PATHNAME', 'alerts_bloom'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_bloom(jsonb) IS
    'The 512-bit bloom bitmap of an alert''s attributes (a JSON object): 7 bits per attribute:value element, hash format version 1. ''{}'' gives all zeros.';

CREATE FUNCTION alerts_bloom_reference(attrs jsonb) RETURNS bit(512)
    AS 'MODULE_PATHNAME', 'alerts_bloom_reference'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION alerts_bloom_reference(jsonb) IS
    'The same bitmap as alerts_bloom, computed through the jsonb text form and a JSON parser instead of walking the binary jsonb: slower, kept as a reference to test alerts_bloom against.';

CREATE FUNCTION alerts_mask(filter jsonb) RETURNS bit(512)
    AS 'MODULE_PATHNAME', 'alerts_mask'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_mask(jsonb) IS
    'The mask of a filter whose every attribute has one value: a row may match when bitmap & mask = mask. One-of arrays are refused; use alerts_bloom_match for them.';

CREATE FUNCTION alerts_bloom_match(bitmap bit, filter jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'alerts_bloom_match'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 1
    SUPPORT alerts_match_support;
COMMENT ON FUNCTION alerts_bloom_match(bit, jsonb) IS
    'Fast probabilistic filter test on a bit(512) bitmap: false means the row cannot match, true that it may (confirm with alerts_attrs_match). The filter is compiled once per query; the per-row test allocates nothing.';

CREATE FUNCTION alerts_attrs_match(attrs jsonb, filter jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'alerts_attrs_match'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 200
    SUPPORT alerts_match_support;
COMMENT ON FUNCTION alerts_attrs_match(jsonb, jsonb) IS
    'Exact filter test on the attributes, with the same semantics as alerts_bloom_match: {"k": v} means k equals v or is an array containing v; {"k": [a, b]} means one of a, b; several keys are ANDed; {} matches every row.';

CREATE FUNCTION alerts_bloom_elements(attrs jsonb) RETURNS integer
    AS 'MODULE_PATHNAME', 'alerts_bloom_elements'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_bloom_elements(jsonb) IS
    'Number of attribute:value elements alerts_bloom hashes for these attributes (a bit(512) bitmap holds about 53 at a 1% false-positive rate).';

CREATE FUNCTION alerts_format_version() RETURNS integer
    AS 'MODULE_PATHNAME', 'alerts_format_version'
    LANGUAGE c IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION alerts_format_version() IS
    'Version of the bitmap format (element encoding and hashing) this library writes. Bitmaps written under another version must be rebuilt.';

CREATE FUNCTION alerts_bloom_trigger() RETURNS trigger
    AS 'MODULE_PATHNAME', 'alerts_bloom_trigger'
    LANGUAGE c;
COMMENT ON FUNCTION alerts_bloom_trigger() IS
    'BEFORE INSERT OR UPDATE row trigger: sets the bit(512) bitmap column from the jsonb attributes column. Arguments: (attributes column, bitmap column), default (attribute_values, attribute_values_bitmap).';

CREATE FUNCTION alerts_ulid_floor(ts timestamptz) RETURNS text
    AS 'MODULE_PATHNAME', 'alerts_ulid_floor'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_ulid_floor(timestamptz) IS
    'The smallest ULID of that millisecond (its time part, then zeros): the lower bound of a time window on a ULID key. Times before 1970 give 00000000000000000000000000.';

CREATE FUNCTION alerts_ulid_time(id text) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'alerts_ulid_time'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_ulid_time(text) IS
    'The time (millisecond precision) encoded in a ULID; an ERROR for anything that is not a 26-character Crockford base32 ULID.';

CREATE FUNCTION alerts_ulid(ts timestamptz DEFAULT clock_timestamp()) RETURNS text
    AS 'MODULE_PATHNAME', 'alerts_ulid'
    LANGUAGE c VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_ulid(timestamptz) IS
    'A new ULID for that time (default: now), with 80 bits from the server''s strong random source. Uppercase, so that text COLLATE "C" order is time order.';

CREATE FUNCTION alerts_search(
    rel anyelement,
    organisation_id text,
    filter jsonb,
    since timestamptz DEFAULT now() - interval '30 days',
    before_id text DEFAULT NULL,
    page_size integer DEFAULT 50
) RETURNS SETOF anyelement
    AS 'MODULE_PATHNAME', 'alerts_search'
    LANGUAGE c STABLE PARALLEL RESTRICTED ROWS 50;
COMMENT ON FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer) IS
    'An exact page of table rel (call as SELECT * FROM alerts_search(NULL::alerts, org, filter)): rows of organisation_id matching filter, newest first, id >= alerts_ulid_floor(since) and id < before_id (NULL: first page), page_size at most. Walks the pagination index (index-only with the bitmap INCLUDEd); once the filter proves rare, switches to a GIN index on attribute_values if there is one. Columns by convention: id, organisation_id, attribute_values, attribute_values_bitmap (use a view to rename).';

CREATE FUNCTION alerts_bloom_stats(
    rel regclass,
    attrs_column name DEFAULT 'attribute_values',
    bitmap_column name DEFAULT 'attribute_values_bitmap',
    sample_percent double precision DEFAULT 100
) RETURNS TABLE (
    rows bigint,
    elements_mean double precision,
    elements_p99 integer,
    elements_max integer,
    bitmap_fill_mean double precision,
    expected_fp_rate_p99 double precision,
    rows_without_bitmap bigint,
    stale_bitmaps bigint,
    advice text
)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sample_percent IS NULL OR sample_percent <= 0 OR sample_percent > 100 THEN
        RAISE EXCEPTION 'alerts_bloom_stats: sample_percent must be in (0, 100], got %', sample_percent
            USING ERRCODE = 'invalid_parameter_value', HINT = 'use 1 to sample 1% of the table''s pages on a large table';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attname = attrs_column AND attnum > 0 AND NOT attisdropped)
       OR NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attname = bitmap_column AND attnum > 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'alerts_bloom_stats: table % has no column % or no column %', rel, attrs_column, bitmap_column
            USING ERRCODE = 'undefined_column',
                  HINT = 'name the jsonb attributes column and the bit(512) bitmap column: alerts_bloom_stats(''t'', ''attrs'', ''bitmap'')';
    END IF;
    EXECUTE format(
        'WITH r AS (
             SELECT @extschema@.alerts_bloom_elements(%2$I) AS n,
                    bit_count(%3$I) AS fill,
                    %3$I IS NULL AS missing,
                    %3$I IS DISTINCT FROM @extschema@.alerts_bloom(%2$I) AS stale
             FROM %1$s %4$s)
         SELECT count(*), avg(n)::float8, (percentile_disc(0.99) WITHIN GROUP (ORDER BY n))::int, max(n)::int,
                avg(fill)::float8 / 512, NULL::float8, count(*) FILTER (WHERE missing), count(*) FILTER (WHERE stale), NULL::text
         FROM r', rel, attrs_column, bitmap_column,
        CASE WHEN sample_percent < 100 THEN format('TABLESAMPLE SYSTEM (%s)', sample_percent) ELSE '' END)
    INTO rows, elements_mean, elements_p99, elements_max, bitmap_fill_mean, expected_fp_rate_p99,
         rows_without_bitmap, stale_bitmaps, advice;
    expected_fp_rate_p99 := power(1 - exp(-7.0 * coalesce(elements_p99, 0) / 512), 7);
    advice := concat_ws(' ',
        CASE WHEN elements_p99 > 53 THEN format(
            'WARNING: 1%% of rows carry %s or more attribute elements, more than the ~53 a bit(512) bitmap holds at a 1%% false-positive rate; a single-value test on them passes by chance %s%% of the time. Pages stay exact but read more rows. Move high-cardinality attributes (ids, free text) out of %I into their own columns.',
            elements_p99, round((expected_fp_rate_p99 * 100)::numeric, 1), attrs_column) END,
        CASE WHEN rows_without_bitmap > 0 THEN format(
            '%s rows have no bitmap: backfill them (UPDATE %s SET %I = %I WHERE %I IS NULL, in batches) or check the trigger.',
            rows_without_bitmap, rel, attrs_column, attrs_column, bitmap_column) END,
        CASE WHEN stale_bitmaps > rows_without_bitmap THEN format(
            '%s bitmaps do not match their attributes (written by another format version or without the trigger): rebuild with UPDATE %s SET %I = @extschema@.alerts_bloom(%I).',
            stale_bitmaps - rows_without_bitmap, rel, bitmap_column, attrs_column) END);
    IF advice = '' THEN
        advice := 'ok: bitmaps are complete, current, and below 1% false positives for 99% of rows';
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION alerts_bloom_stats(regclass, name, name, double precision) IS
    'Sizing report of a table''s bitmaps: rows, attribute elements per row (mean, p99, max), bitmap fill, the expected false-positive rate at p99, rows without or with stale bitmaps, and plain-language advice. sample_percent < 100 reads a TABLESAMPLE SYSTEM sample.';
