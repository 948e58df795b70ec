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

-- The forms of alerts_portable 0.3.0's first cut, which wrote each value
-- into the statement's text (replaced by compile's parameters below).
SET client_min_messages = warning;
DROP FUNCTION IF EXISTS alerts_portable.prepared(text, text[], text[]);
DROP FUNCTION IF EXISTS alerts_portable.exact_sql(text, jsonb);
DROP FUNCTION IF EXISTS alerts_portable.compile(jsonb, jsonb, jsonb, integer);
DROP FUNCTION IF EXISTS alerts_portable.columns_sql(oid, jsonb);
RESET client_min_messages;

-- The filter compiled for one table, as SQL whose values are parameters:
-- the bloom test of an index entry (column b), the exact check of a row
-- (alias a), the keys test (NULL without keys), and each parameter's value
-- and type, numbered from $first. Checks the filter as alerts_search does
-- and the masks against it. The exact check of a key: the attribute equals
-- one of the values, or is an array holding one (numbers by value), as the
-- extension's filter semantics; objects by equality. Every operator,
-- function and type is named with its schema, so the text means the same
-- under any search_path (search prepares it).
CREATE OR REPLACE FUNCTION alerts_portable.compile(
    filter jsonb, masks jsonb, keys jsonb, bits integer, first integer,
    OUT bloom_sql text, OUT exact_sql text, OUT keys_sql text, OUT args text[], OUT types text[])
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k text;
    v jsonb;
    vals jsonb;
    ms jsonb;
    val_arr jsonb[];
    mask_arr text[];
    key_arr text;
    has_null boolean;
    has_array boolean;
    masks_ok boolean;
    kp text;
    vp text;
    ors text[];
    eq text[];
    singles varbit[] := '{}';
    blooms text[] := '{}';
    exacts text[] := '{}';
    key_tests text[] := '{}';
    folded varbit;
BEGIN
    args := '{}';
    types := '{}';
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
        ms := masks -> k;
        ms := CASE WHEN jsonb_typeof(ms) = 'array' THEN ms ELSE jsonb_build_array(ms) END;
        -- the key's values, masks and tenant keys, checked and unpacked in
        -- one statement
        SELECT (SELECT bool_or(jsonb_typeof(e.x) = 'null') FROM jsonb_array_elements(vals) e(x)),
               (SELECT bool_or(jsonb_typeof(e.x) = 'array') FROM jsonb_array_elements(vals) e(x)),
               (SELECT array_agg(e.x ORDER BY e.o) FROM jsonb_array_elements(vals) WITH ORDINALITY e(x, o)),
               (SELECT count(*) = jsonb_array_length(vals)
                       AND coalesce(bool_and(jsonb_typeof(e.x) = 'string' AND e.x #>> '{}' ~ '^[01]+$'
                                             AND (bits <= 0 OR length(e.x #>> '{}') = bits)), true)
                FROM jsonb_array_elements(ms) e(x)),
               (SELECT array_agg(e.x #>> '{}' ORDER BY e.o) FROM jsonb_array_elements(ms) WITH ORDINALITY e(x, o)),
               (SELECT CASE WHEN bool_and(jsonb_typeof(e.x) = 'number') IS NOT FALSE
                            THEN coalesce(array_agg(e.x::text::bigint) FILTER (WHERE jsonb_typeof(e.x) = 'number'), '{}')::text END
                FROM jsonb_array_elements(CASE WHEN jsonb_typeof(keys -> k) = 'array' THEN keys -> k END) e(x))
          INTO has_null, has_array, val_arr, masks_ok, mask_arr, key_arr;
        IF has_null THEN
            RAISE EXCEPTION 'the filter value for "%" is null', left(k, 60)
                USING HINT = 'filters select values; drop the key to not filter on it', ERRCODE = 'invalid_parameter_value';
        END IF;
        IF jsonb_typeof(v) = 'array' AND has_array THEN
            RAISE EXCEPTION 'the filter value for "%" is an array inside a one-of array', left(k, 60)
                USING HINT = 'a one-of array lists single values', ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT masks_ok THEN
            RAISE EXCEPTION 'the masks for "%" do not mirror the filter''s % value(s) at % bits', left(k, 60),
                jsonb_array_length(vals), CASE WHEN bits > 0 THEN bits::text ELSE 'the bitmap''s' END
                USING HINT = 'give one mask({"<attribute>": <value>}, bits) text per filter value, in the filter''s order',
                      ERRCODE = 'invalid_parameter_value';
        END IF;
        IF jsonb_array_length(vals) = 0 THEN
            -- an empty one-of matches no row
            blooms := blooms || 'false'::text;
            exacts := exacts || 'false'::text;
        ELSE
            IF jsonb_array_length(vals) = 1 THEN
                -- single values are folded into one mask below
                singles := singles || mask_arr[1]::varbit;
            ELSE
                ors := '{}';
                FOR i IN 1..cardinality(mask_arr) LOOP
                    args := args || quote_literal(mask_arr[i]);
                    types := types || 'pg_catalog."bit"'::text;
                    ors := ors || format('e.b OPERATOR(pg_catalog.&) $%1$s OPERATOR(pg_catalog.=) $%1$s', first + cardinality(args) - 1);
                END LOOP;
                blooms := blooms || ('(' || array_to_string(ors, ' OR ') || ')');
            END IF;
            args := args || quote_literal(k);
            types := types || 'pg_catalog.text'::text;
            kp := '$' || (first + cardinality(args) - 1);
            eq := '{}';
            FOR i IN 1..cardinality(val_arr) LOOP
                args := args || quote_literal(val_arr[i]::text);
                types := types || 'pg_catalog.jsonb'::text;
                vp := '$' || (first + cardinality(args) - 1);
                eq := eq || CASE WHEN jsonb_typeof(val_arr[i]) = 'object'
                    THEN format('(a.attribute_values OPERATOR(pg_catalog.->) %1$s) OPERATOR(pg_catalog.=) %2$s OR EXISTS ('
                                'SELECT FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof('
                                'a.attribute_values OPERATOR(pg_catalog.->) %1$s) OPERATOR(pg_catalog.=) ''array'' '
                                'THEN a.attribute_values OPERATOR(pg_catalog.->) %1$s ELSE ''[]''::pg_catalog.jsonb END) e(x) '
                                'WHERE e.x OPERATOR(pg_catalog.=) %2$s)', kp, vp)
                    ELSE format('(a.attribute_values OPERATOR(pg_catalog.->) %s) OPERATOR(pg_catalog.@>) %s', kp, vp) END;
            END LOOP;
            exacts := exacts || ('(' || array_to_string(eq, ' OR ') || ')');
        END IF;
        IF keys IS NOT NULL THEN
            IF jsonb_typeof(keys -> k) IS DISTINCT FROM 'array' OR key_arr IS NULL THEN
                RAISE EXCEPTION 'the keys for "%" are missing or not an array of numbers', left(k, 60)
                    USING HINT = 'give the tenant keys of each filter attribute over the window''s weeks (docs/managed-postgres.md), or keys => NULL',
                          ERRCODE = 'invalid_parameter_value';
            END IF;
            args := args || quote_literal(key_arr);
            types := types || 'pg_catalog.int8[]'::text;
            key_tests := key_tests || format('a.attribute_keys OPERATOR(pg_catalog.&&) $%s', first + cardinality(args) - 1);
        END IF;
    END LOOP;
    -- the single values' masks as one: an entry holds all of them when it
    -- holds their union (masks of one width; of several widths, one each)
    IF cardinality(singles) > 0 THEN
        folded := singles[1];
        FOR i IN 2..cardinality(singles) LOOP
            EXIT WHEN length(singles[i]) <> length(folded);
            folded := folded | singles[i];
            IF i = cardinality(singles) THEN
                singles := ARRAY[folded];
            END IF;
        END LOOP;
        FOR i IN 1..cardinality(singles) LOOP
            args := args || quote_literal(singles[i]::text);
            types := types || 'pg_catalog."bit"'::text;
            blooms := blooms || format('e.b OPERATOR(pg_catalog.&) $%1$s OPERATOR(pg_catalog.=) $%1$s', first + cardinality(args) - 1);
        END LOOP;
    END IF;
    bloom_sql := coalesce(nullif(array_to_string(blooms, ' AND '), ''), 'true');
    exact_sql := coalesce(nullif(array_to_string(exacts, ' AND '), ''), 'true');
    keys_sql := CASE WHEN keys IS NOT NULL THEN coalesce(nullif(array_to_string(key_tests, ' AND '), ''), 'true') END;
END $$;

-- The column filter, as alerts_search's columns: each column equals a
-- value or one of several (null: IS NULL), by its type's equality; as SQL
-- over alias a whose values are parameters numbered from $first.
CREATE OR REPLACE FUNCTION alerts_portable.columns_sql(
    relid oid, columns jsonb, first integer, OUT sql text, OUT args text[], OUT types text[])
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
    args := '{}';
    types := '{}';
    sql := 'true';
    IF columns IS NULL THEN
        RETURN;
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
            IF jsonb_typeof(x) = 'null' THEN
                ors := ors || format('a.%I IS NULL', col);
            ELSE
                args := args || quote_literal(x #>> '{}');
                types := types || typ;
                ors := ors || format('a.%I OPERATOR(pg_catalog.=) $%s', col, first + cardinality(args) - 1);
            END IF;
        END LOOP;
        out := out || coalesce('(' || array_to_string(ors, ' OR ') || ')', 'false');
    END LOOP;
    sql := coalesce(nullif(array_to_string(out, ' AND '), ''), 'true');
END $$;

-- The name of a prepared statement of this session that runs body over
-- parameters of these types, made on first use and planned once for all
-- calls with the same text (EXECUTE name(args) runs it). The name is the
-- text's hash, and a statement of that name is used only if its text is
-- this one (otherwise it is made again), so nothing another piece of code
-- prepared runs in its place.
CREATE OR REPLACE FUNCTION alerts_portable.prepared(body text, types text[]) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stmt text;
    nm text;
    have text;
BEGIN
    stmt := format('(%s) AS %s', array_to_string(types, ', '), body);
    nm := 'alerts_portable_' || left(md5(stmt), 24);
    stmt := format('PREPARE %I%s', nm, stmt);
    SELECT p.statement INTO have FROM pg_prepared_statements p WHERE p.name = nm;
    IF have IS DISTINCT FROM stmt THEN
        IF have IS NOT NULL THEN
            EXECUTE format('DEALLOCATE %I', nm);
        END IF;
        EXECUTE stmt;
    END IF;
    RETURN nm;
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
-- exactly. Its statements are prepared once a session for each table and
-- filter shape (alerts_portable.prepared), the values being parameters.
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
    LANGUAGE plpgsql VOLATILE ROWS 50
    SET search_path = pg_catalog, pg_temp
    -- the walk reads its chunk in index order: a chunk that spans most of
    -- what is left of the window must not become a bitmap scan and a sort
    -- (the keys' statement turns bitmap scans back on; both end with the call)
    SET enable_bitmapscan = off
    -- the walk's statements are planned once, for any tenant, cursor and
    -- chunk (the keys' statement is planned for its keys each time)
    SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    relid oid;
    tab text;
    cols text;
    bits integer;
    f record;
    c record;
    where_rows text;
    types text[];
    values_sql text;
    floor_id text;
    cursor_id text;
    chunk integer;
    walked bigint := 0;
    found_rows bigint := 0;
    entries integer;
    low text;
    shape text;
    chunk_nm text;
    rows_nm text;
    chunk_cmd text;
    entries_sql text;
    rows_first boolean;
    seen bigint := 0;
    n bigint;
BEGIN
    IF organisation_id IS NULL THEN
        RAISE EXCEPTION 'organisation_id is null' USING HINT = 'pass the tenant to page', ERRCODE = 'null_value_not_allowed';
    END IF;
    IF page_size IS NULL OR page_size < 1 OR page_size > 10000 THEN
        RAISE EXCEPTION 'page_size must be between 1 and 10000, got %', coalesce(page_size::text, 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- the table, its bitmap's width, and the row's columns by name with
    -- their types' hash in a comment (a changed table gets statements of
    -- its own)
    SELECT r.oid, format('%I.%I', ns.nspname, r.relname),
           (SELECT CASE WHEN a.atttypid = 'bit'::regtype THEN a.atttypmod ELSE 0 END FROM pg_attribute a
            WHERE a.attrelid = r.oid AND a.attname = 'attribute_values_bitmap' AND NOT a.attisdropped),
           (SELECT string_agg(format('a.%I', a.attname), ', ' ORDER BY a.attnum) || ' /* '
                   || md5(string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ',' ORDER BY a.attnum))
                   || ' */'
            FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped)
      INTO relid, tab, bits, cols
    FROM pg_type t JOIN pg_class r ON r.oid = t.typrelid JOIN pg_namespace ns ON ns.oid = r.relnamespace
    WHERE t.oid = pg_typeof(rel);
    IF tab IS NULL THEN
        RAISE EXCEPTION 'rel must be a row of the alerts table, got a value of type %', pg_typeof(rel)
            USING HINT = 'call as alerts_portable.search(NULL::alerts, ...)', ERRCODE = 'invalid_parameter_value';
    END IF;
    IF bits IS NULL THEN
        RAISE EXCEPTION '% has no column attribute_values_bitmap', tab
            USING HINT = 'store the client''s bloom(attrs, bits) in a bit(bits) column of that name (docs/managed-postgres.md)',
                  ERRCODE = 'undefined_column';
    END IF;
    -- $1 the tenant, $2 the window's floor, $3 the cursor, $4 the chunk's
    -- size, $5 the rows the page still needs; the filter's values after
    f := alerts_portable.compile(filter, masks, keys, bits, 6);
    c := alerts_portable.columns_sql(relid, columns, 6 + cardinality(f.args));
    types := ARRAY['pg_catalog.text', 'pg_catalog.text', 'pg_catalog.text', 'pg_catalog.int4', 'pg_catalog.int4']
             || f.types || c.types;
    values_sql := coalesce(nullif(', ' || array_to_string(f.args || c.args, ', '), ', '), '');
    floor_id := alerts_portable.ulid_floor(coalesce(since, '-infinity'));
    cursor_id := before_id;
    where_rows := format('a.organisation_id OPERATOR(pg_catalog.=) $1 AND %s AND %s', f.exact_sql, c.sql);
    chunk := greatest(2 * page_size, 100);
    LOOP
        -- the statements of this cursor's shape (the first page has none)
        IF shape IS DISTINCT FROM (cursor_id IS NULL)::text THEN
            shape := (cursor_id IS NULL)::text;
            -- one chunk of the pagination index, newest first, its entries
            -- tested on their bitmap in the index
            entries_sql := format('SELECT a.id, a.attribute_values_bitmap AS b FROM %s a '
                                  'WHERE a.organisation_id OPERATOR(pg_catalog.=) $1 AND a.id OPERATOR(pg_catalog.>=) $2 %s '
                                  'ORDER BY a.id DESC LIMIT $4',
                                  tab, CASE WHEN cursor_id IS NULL THEN '' ELSE 'AND a.id OPERATOR(pg_catalog.<) $3' END);
            -- how many entries the chunk holds, where it ends, how many
            -- are candidates
            chunk_nm := alerts_portable.prepared(
                format('SELECT pg_catalog.count(*)::pg_catalog.int4, pg_catalog.min(e.id), pg_catalog.count(*) FILTER (WHERE %s) '
                       'FROM (%s) e', f.bloom_sql, entries_sql), types);
            -- the chunk's candidates fetched in order and checked exactly
            -- until the page is full
            rows_nm := alerts_portable.prepared(
                format('SELECT r.* FROM (SELECT e.id FROM (%s) e WHERE %s) c '
                       'CROSS JOIN LATERAL (SELECT %s FROM %s a WHERE a.id OPERATOR(pg_catalog.=) c.id AND %s) r '
                       'ORDER BY c.id DESC LIMIT $5', entries_sql, f.bloom_sql, cols, tab, where_rows), types);
        END IF;
        -- after the first chunk (which most pages fill), where the chunk
        -- ends and how many candidates it holds come first: a chunk with
        -- none (a rare filter's usual chunk) needs no second statement
        rows_first := walked = 0;
        chunk_cmd := format('EXECUTE %I(%L, %L, %L, %s, NULL%s)', chunk_nm, organisation_id, floor_id, cursor_id, chunk, values_sql);
        IF NOT rows_first THEN
            EXECUTE chunk_cmd INTO entries, low, n;
            walked := walked + entries;
            seen := seen + n;
        END IF;
        IF rows_first OR n > 0 THEN
            RETURN QUERY EXECUTE format('EXECUTE %I(%L, %L, %L, %s, %s%s)', rows_nm, organisation_id, floor_id, cursor_id,
                                        chunk, page_size - found_rows, values_sql);
            GET DIAGNOSTICS n = ROW_COUNT;
            found_rows := found_rows + n;
            EXIT WHEN found_rows >= page_size;
        END IF;
        IF rows_first THEN
            -- the first chunk did not fill the page: where it ended
            EXECUTE chunk_cmd INTO entries, low, n;
            walked := walked + entries;
            seen := seen + n;
        END IF;
        EXIT WHEN entries < chunk;
        cursor_id := low;
        -- rare: the rest of the page from the keys' GIN index once the walk
        -- so far says filling it would read many more entries (each chunk
        -- costs this function a statement; the keys one statement in all),
        -- planned for its keys
        IF f.keys_sql IS NOT NULL AND walked >= 300
           AND (page_size - found_rows) * walked > 5000 * greatest(found_rows, 0.5) THEN
            PERFORM set_config('enable_bitmapscan', 'on', true);
            PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
            RETURN QUERY EXECUTE format('EXECUTE %I(%L, %L, %L, NULL, %s%s)', alerts_portable.prepared(
                format('SELECT %s FROM %s a WHERE %s AND a.id OPERATOR(pg_catalog.>=) $2 AND a.id OPERATOR(pg_catalog.<) $3 '
                       'AND %s ORDER BY a.id DESC LIMIT $5', cols, tab, where_rows, f.keys_sql), types),
                organisation_id, floor_id, cursor_id, page_size - found_rows, values_sql);
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
COMMENT ON FUNCTION alerts_portable.compile(jsonb, jsonb, jsonb, integer, integer) IS
    'Used by search: the filter checked as alerts_search checks it and the masks against it, compiled to the bloom test, the exact check and the keys test, their values as parameters from $first.';
COMMENT ON FUNCTION alerts_portable.columns_sql(oid, jsonb, integer) IS
    'Used by search: the columns filter (each column equal to a value or one of several; null: IS NULL) as SQL over alias a, its values as parameters from $first.';
COMMENT ON FUNCTION alerts_portable.prepared(text, text[]) IS
    'Used by search: prepares body over parameters of these types once a session (named by its text''s hash, used only if the text is the same) and returns its name.';
COMMENT ON FUNCTION alerts_portable.search(anyelement, text, jsonb, jsonb, jsonb, timestamptz, text, integer, jsonb) IS
    'An exact page of table rel without the extension (call as SELECT * FROM alerts_portable.search(NULL::alerts, org, filter, masks)): as alerts_search, with the filter''s masks (and optionally tenant keys) computed by a client encoder.';
