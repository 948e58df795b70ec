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

CREATE FUNCTION alerts_gin_candidates(filter jsonb, col text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN coalesce((
        SELECT string_agg('(' || (
            SELECT coalesce(string_agg(format('%1$s @> %2$L::jsonb OR %1$s @> %3$L::jsonb', col,
                                              jsonb_build_object(c.key, alt), jsonb_build_object(c.key, jsonb_build_array(alt))), ' OR '), 'false')
            FROM jsonb_array_elements(CASE jsonb_typeof(c.value) WHEN 'array' THEN c.value ELSE jsonb_build_array(c.value) END) alt
        ) || ')', ' AND ')
        FROM jsonb_each(filter) c
        WHERE jsonb_typeof(filter) = 'object'), 'true');
COMMENT ON FUNCTION alerts_gin_candidates(jsonb, text) IS
    'Internal to alerts_search: a jsonb containment predicate on column col that a GIN index can serve and that every exact match of filter satisfies (a superset: alerts_search rechecks exactly).';

CREATE FUNCTION alerts_search(
    rel anyelement,
    organisation_id text,
    filter jsonb,
    since timestamptz DEFAULT now() - interval '30 days',
    before_id text DEFAULT NULL,
    page_size integer DEFAULT 50
) RETURNS SETOF anyelement
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl regclass;
    has_gin boolean;
    got bigint;
    budget integer;
    frontier text;
    floor_id text;
    walk text;
BEGIN
    SELECT t.typrelid::regclass INTO tbl FROM pg_type t WHERE t.oid = pg_typeof(rel) AND t.typrelid <> 0;
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'alerts_search: first argument must be a table''s row type, got %', pg_typeof(rel)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'call it as SELECT * FROM alerts_search(NULL::alerts, $1, $2)';
    END IF;
    IF organisation_id IS NULL OR filter IS NULL OR since IS NULL OR page_size IS NULL THEN
        RAISE EXCEPTION 'alerts_search: organisation_id, filter, since and page_size must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'pass ''{}'' as the filter to match every alert, and leave before_id NULL for the first page';
    END IF;
    IF page_size < 1 THEN
        RAISE EXCEPTION 'alerts_search: page_size must be at least 1, got %', page_size
            USING ERRCODE = 'invalid_parameter_value', HINT = 'pages are usually 50 rows';
    END IF;
    -- Validates the filter early, with the filter error message.
    PERFORM @extschema@.alerts_bloom_match(repeat('0', 512)::bit(512), filter);
    floor_id := @extschema@.alerts_ulid_floor(since);
    before_id := coalesce(before_id, '8');  -- '8' sorts after every ULID

    -- Phase 1: walk the newest `budget` rows of the window along the
    -- pagination index. It reads only (organisation_id, id, bitmap): with the
    -- bitmap INCLUDEd in the index this is an index-only scan, and the heap is
    -- visited only for bloom candidates, to recheck and return them.
    budget := greatest(1000, 20 * page_size);
    walk := format(
        'SELECT a.* FROM (SELECT c.id, @extschema@.alerts_bloom_match(c.attribute_values_bitmap, $4) AS maybe
                          FROM %1$s c
                          WHERE c.organisation_id = $1 AND c.id >= $2 AND c.id < $3
                          ORDER BY c.id DESC LIMIT $6) k
         CROSS JOIN LATERAL (SELECT * FROM %1$s a
                             WHERE a.id = k.id AND @extschema@.alerts_attrs_match(a.attribute_values, $4)) a
         WHERE k.maybe
         ORDER BY k.id DESC LIMIT $5', tbl);
    RETURN QUERY EXECUTE walk USING organisation_id, floor_id, before_id, filter, page_size, budget;
    GET DIAGNOSTICS got = ROW_COUNT;
    IF got >= page_size THEN
        RETURN;
    END IF;
    -- Where did the walk stop? NULL: it read the whole window, the page is complete.
    EXECUTE format('SELECT c.id FROM %1$s c WHERE c.organisation_id = $1 AND c.id >= $2 AND c.id < $3
                    ORDER BY c.id DESC OFFSET $4 - 1 LIMIT 1', tbl)
        INTO frontier USING organisation_id, floor_id, before_id, budget;
    IF frontier IS NULL THEN
        RETURN;
    END IF;

    -- Phase 2: the filter has proved rare (fewer than page_size matches in
    -- `budget` rows). With a GIN index on attribute_values, let it find the
    -- few candidates in the rest of the window; otherwise keep walking, now
    -- without a budget. Both recheck exactly.
    SELECT EXISTS (
        SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
        JOIN pg_attribute att ON att.attrelid = i.indrelid AND att.attnum = i.indkey[0]
        WHERE i.indrelid = tbl AND am.amname = 'gin' AND att.attname = 'attribute_values' AND i.indisvalid)
    INTO has_gin;
    IF has_gin THEN
        RETURN QUERY EXECUTE format(
            'SELECT * FROM %1$s a
             WHERE a.organisation_id = $1 AND a.id >= $2 AND a.id < $3 AND (%2$s)
               AND @extschema@.alerts_attrs_match(a.attribute_values, $4)
             ORDER BY a.id DESC LIMIT $5', tbl, @extschema@.alerts_gin_candidates(filter, 'a.attribute_values'))
            USING organisation_id, floor_id, frontier, filter, page_size - got;
    ELSE
        RETURN QUERY EXECUTE format(
            'SELECT a.* FROM (SELECT c.id FROM %1$s c
                              WHERE c.organisation_id = $1 AND c.id >= $2 AND c.id < $3
                                AND @extschema@.alerts_bloom_match(c.attribute_values_bitmap, $4)
                              ORDER BY c.id DESC) k
             CROSS JOIN LATERAL (SELECT * FROM %1$s a
                                 WHERE a.id = k.id AND @extschema@.alerts_attrs_match(a.attribute_values, $4)) a
             ORDER BY k.id DESC LIMIT $5', tbl)
            USING organisation_id, floor_id, frontier, filter, page_size - got;
    END IF;
END
$$;
COMMENT ON FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer) IS
    'An exact page of table rel (call as alerts_search(NULL::alerts, org, filter)): rows of organisation_id matching filter, newest first, id >= alerts_ulid_floor(since) and id < before_id (NULL: first page), page_size at most. Walks the pagination index (index-only with the bitmap INCLUDEd); once the filter proves rare, switches to a GIN index on attribute_values if there is one. Columns by convention: id, organisation_id, attribute_values, attribute_values_bitmap (use a view to rename).';
