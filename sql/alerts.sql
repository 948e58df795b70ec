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
