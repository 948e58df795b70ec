-- alerts_portable 0.3.0: alerts_search as portable SQL, for PostgreSQL
-- where the alerts extension cannot load (docs/managed-postgres.md).
--
-- Plain SQL and PL/pgSQL: no C, no superuser, every name qualified. Run it
-- as the role that owns the schema it creates:
--
--     psql -v ON_ERROR_STOP=1 -f clients/sql/alerts_portable.sql
--
-- The bitmaps, masks and tenant keys are the client encoders' (bloom, mask,
-- keys in clients/<language>), hash format 1. Every function runs with the
-- caller's rights (SECURITY INVOKER) and a search_path of pg_catalog only,
-- so it reads exactly what the caller's own SELECT could read and calls no
-- function or operator another role could create. It keeps working, unchanged,
-- once CREATE EXTENSION alerts arrives.

CREATE SCHEMA IF NOT EXISTS alerts_portable;
COMMENT ON SCHEMA alerts_portable IS 'alerts_search as portable SQL (alerts 0.3.0, hash format 1)';

CREATE OR REPLACE FUNCTION alerts_portable.version() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT '0.3.0 format 1'::text $$;

-- The smallest ULID of the millisecond of ts, as alerts_ulid_floor: the
-- window's lower bound (times before 1970 give all zeros).
CREATE OR REPLACE FUNCTION alerts_portable.ulid_floor(ts timestamptz) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    alphabet constant text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    ms bigint;
    out text := '';
BEGIN
    IF ts = '-infinity'::timestamptz OR ts < '1970-01-01 00:00:00+00'::timestamptz THEN
        RETURN repeat('0', 26);
    END IF;
    IF ts > '10889-08-02 05:31:50.655+00'::timestamptz THEN
        RAISE EXCEPTION 'the time is after the last time a ULID can hold (10889-08-02 05:31:50.655 UTC)'
            USING HINT = 'pass an earlier time', ERRCODE = 'invalid_parameter_value';
    END IF;
    ms := floor(extract(epoch FROM ts) * 1000)::bigint;
    FOR i IN 0..9 LOOP
        out := out || substr(alphabet, ((ms >> (45 - 5 * i)) & 31)::int + 1, 1);
    END LOOP;
    RETURN out || repeat('0', 16);
END $$;

-- The exact check of one filter key: the attribute equals one of the
-- values, or is an array holding one (numbers by value), as the extension's
-- filter semantics; the SQL of it for a row aliased a.
CREATE OR REPLACE FUNCTION alerts_portable.exact_sql(key text, vals jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce('(' || string_agg(
        CASE WHEN jsonb_typeof(v) = 'object'
             THEN format('(a.attribute_values -> %L) = %L::jsonb OR EXISTS (SELECT FROM jsonb_array_elements('
                         || 'CASE jsonb_typeof(a.attribute_values -> %L) WHEN ''array'' THEN a.attribute_values -> %L '
                         || 'ELSE ''[]''::jsonb END) e(x) WHERE e.x = %L::jsonb)', key, v, key, key, v)
             ELSE format('(a.attribute_values -> %L) @> %L::jsonb', key, v) END, ' OR ') || ')', 'false')
    FROM jsonb_array_elements(vals) t(v)
$$;

-- The filter compiled for one table: the bloom test of an index entry
-- (column b), the exact check of a row (alias a), and the keys test (NULL
-- without keys). Checks the filter as alerts_search does and the masks
-- against it.
CREATE OR REPLACE FUNCTION alerts_portable.compile(
    filter jsonb, masks jsonb, keys jsonb, bits integer,
    OUT bloom_sql text, OUT exact_sql text, OUT keys_sql text)
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k text;
    v jsonb;
    vals jsonb;
    ms jsonb;
    m jsonb;
    ors text[];
    blooms text[] := '{}';
    exacts text[] := '{}';
    key_tests text[] := '{}';
BEGIN
    IF filter IS NULL OR jsonb_typeof(filter) <> 'object' THEN
        RAISE EXCEPTION 'the filter must be a JSON object, got a JSON %', coalesce(jsonb_typeof(filter), 'null')
            USING HINT = 'write filters as {"<attribute>": "<value>"} or {"<attribute>": ["<value>", ...]}; ''{}'' matches every row',
                  ERRCODE = 'invalid_parameter_value';
    END IF;
    IF masks IS NULL OR jsonb_typeof(masks) <> 'object' THEN
        RAISE EXCEPTION 'the masks must be a JSON object mirroring the filter'
            USING HINT = 'pass {"<attribute>": mask({"<attribute>": <value>}, bits)} for each filter value, one-of values as an array of masks in the filter''s order',
                  ERRCODE = 'invalid_parameter_value';
    END IF;
    IF keys IS NOT NULL AND jsonb_typeof(keys) <> 'object' THEN
        RAISE EXCEPTION 'the keys must be a JSON object of the filter''s attributes and arrays of tenant keys'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(filter) LOOP
        vals := CASE WHEN jsonb_typeof(v) = 'array' THEN v ELSE jsonb_build_array(v) END;
        IF EXISTS (SELECT FROM jsonb_array_elements(vals) e(x) WHERE jsonb_typeof(x) = 'null') THEN
            RAISE EXCEPTION 'the filter value for "%" is null', left(k, 60)
                USING HINT = 'filters select values; drop the key to not filter on it', ERRCODE = 'invalid_parameter_value';
        END IF;
        IF jsonb_typeof(v) = 'array' AND EXISTS (SELECT FROM jsonb_array_elements(vals) e(x) WHERE jsonb_typeof(x) = 'array') THEN
            RAISE EXCEPTION 'the filter value for "%" is an array inside a one-of array', left(k, 60)
                USING HINT = 'a one-of array lists single values', ERRCODE = 'invalid_parameter_value';
        END IF;
        ms := masks -> k;
        ms := CASE WHEN jsonb_typeof(ms) = 'array' THEN ms ELSE jsonb_build_array(ms) END;
        IF jsonb_array_length(ms) <> jsonb_array_length(vals)
           OR EXISTS (SELECT FROM jsonb_array_elements(ms) e(x)
                      WHERE jsonb_typeof(x) <> 'string' OR x #>> '{}' !~ '^[01]+$'
                         OR (bits > 0 AND length(x #>> '{}') <> bits)) THEN
            RAISE EXCEPTION 'the masks for "%" do not mirror the filter''s % value(s) at % bits', left(k, 60),
                jsonb_array_length(vals), CASE WHEN bits > 0 THEN bits::text ELSE 'the bitmap''s' END
                USING HINT = 'give one mask({"<attribute>": <value>}, bits) text per filter value, in the filter''s order',
                      ERRCODE = 'invalid_parameter_value';
        END IF;
        ors := '{}';
        FOR m IN SELECT x FROM jsonb_array_elements(ms) e(x) LOOP
            ors := ors || format('e.b & %1$L::bit varying = %1$L::bit varying', m #>> '{}');
        END LOOP;
        blooms := blooms || coalesce('(' || array_to_string(ors, ' OR ') || ')', 'false');
        exacts := exacts || alerts_portable.exact_sql(k, vals);
        IF keys IS NOT NULL THEN
            IF jsonb_typeof(keys -> k) IS DISTINCT FROM 'array'
               OR EXISTS (SELECT FROM jsonb_array_elements(keys -> k) e(x) WHERE jsonb_typeof(x) <> 'number') THEN
                RAISE EXCEPTION 'the keys for "%" are missing or not an array of numbers', left(k, 60)
                    USING HINT = 'give the tenant keys of each filter attribute over the window''s weeks (docs/managed-postgres.md), or keys => NULL',
                          ERRCODE = 'invalid_parameter_value';
            END IF;
            key_tests := key_tests || format('a.attribute_keys OPERATOR(pg_catalog.&&) %L::bigint[]',
                (SELECT coalesce(array_agg(x::text::bigint), '{}') FROM jsonb_array_elements(keys -> k) e(x)));
        END IF;
    END LOOP;
    bloom_sql := coalesce(nullif(array_to_string(blooms, ' AND '), ''), 'true');
    exact_sql := coalesce(nullif(array_to_string(exacts, ' AND '), ''), 'true');
    keys_sql := CASE WHEN keys IS NOT NULL THEN coalesce(nullif(array_to_string(key_tests, ' AND '), ''), 'true') END;
END $$;

-- The column filter, as alerts_search's columns: each column equals a
-- value or one of several (null: IS NULL), by its type's equality.
CREATE OR REPLACE FUNCTION alerts_portable.columns_sql(relid oid, columns jsonb) RETURNS text
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col text;
    v jsonb;
    typ text;
    ors text[];
    x jsonb;
    out text[] := '{}';
BEGIN
    IF columns IS NULL THEN
        RETURN 'true';
    END IF;
    IF jsonb_typeof(columns) <> 'object' THEN
        RAISE EXCEPTION 'columns must be a JSON object of column names and values, got a JSON %', jsonb_typeof(columns)
            USING HINT = 'for example columns => ''{"priority_id": [1, 2]}''', ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR col, v IN SELECT * FROM jsonb_each(columns) LOOP
        SELECT format_type(atttypid, atttypmod) INTO typ FROM pg_attribute
        WHERE attrelid = relid AND attname = col AND attnum > 0 AND NOT attisdropped;
        IF typ IS NULL THEN
            RAISE EXCEPTION 'column "%" of the columns filter is not a column of %', col, relid::regclass
                USING ERRCODE = 'undefined_column';
        END IF;
        ors := '{}';
        FOR x IN SELECT e FROM jsonb_array_elements(CASE jsonb_typeof(v) WHEN 'array' THEN v ELSE jsonb_build_array(v) END) t(e) LOOP
            IF jsonb_typeof(x) IN ('object', 'array') THEN
                RAISE EXCEPTION 'the value for column "%" is a JSON %', col, jsonb_typeof(x)
                    USING HINT = 'give a value or an array of values', ERRCODE = 'invalid_parameter_value';
            END IF;
            ors := ors || CASE WHEN jsonb_typeof(x) = 'null' THEN format('a.%I IS NULL', col)
                               ELSE format('a.%I = %L::%s', col, x #>> '{}', typ) END;
        END LOOP;
        out := out || coalesce('(' || array_to_string(ors, ' OR ') || ')', 'false');
    END LOOP;
    RETURN coalesce(nullif(array_to_string(out, ' AND '), ''), 'true');
END $$;

-- An exact page of rel's table (call as SELECT * FROM
-- alerts_portable.search(NULL::alerts, org, filter, masks)): rows of
-- organisation_id matching filter, newest first, id >= ulid_floor(since)
-- and id < before_id (NULL: the first page), page_size at most; columns as
-- alerts_search's. masks mirrors filter with each value's mask text
-- (mask({k: v}, bits)); keys, when given, holds each filter attribute's
-- tenant keys over the window and lets a rare filter leave the walk for
-- the attribute_keys column's GIN index. Walks the pagination index
-- (organisation_id, id DESC) INCLUDE (attribute_values_bitmap) in chunks,
-- testing each entry's bitmap; only candidates are fetched and checked
-- exactly.
CREATE OR REPLACE FUNCTION alerts_portable.search(
    rel anyelement,
    organisation_id text,
    filter jsonb,
    masks jsonb,
    keys jsonb DEFAULT NULL,
    since timestamptz DEFAULT now() - interval '30 days',
    before_id text DEFAULT NULL,
    page_size integer DEFAULT 50,
    columns jsonb DEFAULT NULL
) RETURNS SETOF anyelement
    LANGUAGE plpgsql STABLE ROWS 50
    SET search_path = pg_catalog, pg_temp
    -- the walk reads its chunk in index order: a chunk that spans most of
    -- what is left of the window must not become a bitmap scan and a sort
    -- (the keys' statement turns bitmap scans back on; both end with the call)
    SET enable_bitmapscan = off
AS $$
DECLARE
    relid oid;
    tab text;
    bits integer;
    f record;
    where_rows text;
    floor_id text;
    cursor_id text;
    chunk integer;
    walked bigint := 0;
    found_rows bigint := 0;
    entries integer;
    low text;
    entries_sql text;
    chunk_sql text;
    rows_first boolean;
    seen bigint := 0;
    n bigint;
BEGIN
    SELECT t.typrelid INTO relid FROM pg_type t WHERE t.oid = pg_typeof(rel);
    IF relid IS NULL OR relid = 0 THEN
        RAISE EXCEPTION 'rel must be a row of the alerts table, got a value of type %', pg_typeof(rel)
            USING HINT = 'call as alerts_portable.search(NULL::alerts, ...)', ERRCODE = 'invalid_parameter_value';
    END IF;
    IF organisation_id IS NULL THEN
        RAISE EXCEPTION 'organisation_id is null' USING HINT = 'pass the tenant to page', ERRCODE = 'null_value_not_allowed';
    END IF;
    IF page_size IS NULL OR page_size < 1 OR page_size > 10000 THEN
        RAISE EXCEPTION 'page_size must be between 1 and 10000, got %', coalesce(page_size::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    tab := relid::regclass::text;
    SELECT CASE WHEN a.atttypid = 'bit'::regtype THEN a.atttypmod ELSE 0 END INTO bits
    FROM pg_attribute a WHERE a.attrelid = relid AND a.attname = 'attribute_values_bitmap' AND NOT a.attisdropped;
    IF bits IS NULL THEN
        RAISE EXCEPTION '% has no column attribute_values_bitmap', tab
            USING HINT = 'store the client''s bloom(attrs, bits) in a bit(bits) column of that name (docs/managed-postgres.md)',
                  ERRCODE = 'undefined_column';
    END IF;
    f := alerts_portable.compile(filter, masks, keys, bits);
    floor_id := alerts_portable.ulid_floor(coalesce(since, '-infinity'));
    cursor_id := before_id;
    where_rows := format('a.organisation_id = $1 AND %s AND %s', f.exact_sql,
                         alerts_portable.columns_sql(relid, columns));
    chunk := greatest(2 * page_size, 100);
    LOOP
        -- one chunk of the pagination index, newest first, its entries
        -- tested on their bitmap in the index; the candidates fetched in
        -- order and checked exactly until the page is full
        entries_sql := format('SELECT a.id, a.attribute_values_bitmap AS b FROM %s a '
                              'WHERE a.organisation_id = $1 AND a.id >= $2 %s ORDER BY a.id DESC LIMIT $4',
                              tab, CASE WHEN cursor_id IS NULL THEN '' ELSE 'AND a.id < $3' END);
        -- after the first chunk (which most pages fill), where the chunk
        -- ends and how many candidates it holds come first: a chunk with
        -- none (a rare filter's usual chunk) needs no second statement
        chunk_sql := format('SELECT count(*), min(e.id), count(*) FILTER (WHERE %s) FROM (%s) e',
                            f.bloom_sql, entries_sql);
        rows_first := walked = 0;
        IF NOT rows_first THEN
            EXECUTE chunk_sql INTO entries, low, n USING organisation_id, floor_id, cursor_id, chunk;
            walked := walked + entries;
            seen := seen + n;
        END IF;
        IF rows_first OR n > 0 THEN
            RETURN QUERY EXECUTE format('SELECT r.* FROM (SELECT e.id FROM (%s) e WHERE %s) c '
                                        'CROSS JOIN LATERAL (SELECT a.* FROM %s a WHERE a.id = c.id AND %s) r '
                                        'ORDER BY c.id DESC LIMIT $5', entries_sql, f.bloom_sql, tab, where_rows)
                USING organisation_id, floor_id, cursor_id, chunk, page_size - found_rows;
            GET DIAGNOSTICS n = ROW_COUNT;
            found_rows := found_rows + n;
            EXIT WHEN found_rows >= page_size;
        END IF;
        IF rows_first THEN
            -- the first chunk did not fill the page: where it ended
            EXECUTE chunk_sql INTO entries, low, n USING organisation_id, floor_id, cursor_id, chunk;
            walked := walked + entries;
            seen := seen + n;
        END IF;
        EXIT WHEN entries < chunk;
        cursor_id := low;
        -- rare: the rest of the page from the keys' GIN index once the walk
        -- so far says filling it would read many more entries (each chunk
        -- costs this function a statement; the keys one statement in all)
        IF f.keys_sql IS NOT NULL AND walked >= 300
           AND (page_size - found_rows) * walked > 5000 * greatest(found_rows, 0.5) THEN
            PERFORM set_config('enable_bitmapscan', 'on', true);
            RETURN QUERY EXECUTE format('SELECT a.* FROM %s a WHERE %s AND a.id >= $2 AND a.id < $3 AND %s '
                                        'ORDER BY a.id DESC LIMIT $4', tab, where_rows, f.keys_sql)
                USING organisation_id, floor_id, cursor_id, page_size - found_rows;
            RETURN;
        END IF;
        -- the next chunk: what the candidates' rate so far says the page
        -- needs, a quarter more, within 100 and 8,192 entries
        chunk := CASE WHEN seen = 0 THEN chunk * 2
                      ELSE ceil((page_size - found_rows) * walked * 1.25 / seen)::integer + 16 END;
        chunk := least(greatest(chunk, 100), 8192);
    END LOOP;
END $$;

COMMENT ON FUNCTION alerts_portable.version() IS
    'The alerts release this script belongs to and the hash format its masks and keys must be in (a client''s FORMAT_VERSION).';
COMMENT ON FUNCTION alerts_portable.ulid_floor(timestamptz) IS
    'The smallest ULID of the millisecond of ts, as alerts_ulid_floor: a window''s lower bound on id (before 1970: all zeros).';
COMMENT ON FUNCTION alerts_portable.exact_sql(text, jsonb) IS
    'Used by search: the exact check of one filter key (the attribute equals one of vals, or is an array holding one), as SQL over alias a.';
COMMENT ON FUNCTION alerts_portable.compile(jsonb, jsonb, jsonb, integer) IS
    'Used by search: the filter checked as alerts_search checks it and the masks against it, compiled to the bloom test, the exact check and the keys test.';
COMMENT ON FUNCTION alerts_portable.columns_sql(oid, jsonb) IS
    'Used by search: the columns filter (each column equal to a value or one of several; null: IS NULL) as SQL over alias a.';
COMMENT ON FUNCTION alerts_portable.search(anyelement, text, jsonb, jsonb, jsonb, timestamptz, text, integer, jsonb) IS
    'An exact page of table rel without the extension (call as SELECT * FROM alerts_portable.search(NULL::alerts, org, filter, masks)): as alerts_search, with the filter''s masks (and optionally tenant keys) computed by a client encoder.';
