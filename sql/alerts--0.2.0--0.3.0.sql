-- alerts 0.2.0 -> 0.3.0. Hand-written and frozen once 0.3.0 is released;
-- tests/shell/upgrade.sh checks that 0.2.0 (and 0.1.0) upgraded through it
-- build exactly the objects of a fresh install of sql/alerts.sql.
--
-- 0.3.0: the library was reorganised and builds for PostgreSQL 15, 16 and
-- 18; the procedures and checks accept partitioned tables (the backfill
-- walks every leaf partition; alerts_index_command returns one statement
-- per row), and Citus tables (alerts_search reads the tenant's shard or
-- routes one statement to it through alerts_search_wire; the backfill runs
-- on every shard placement). alerts_search takes a column filter
-- (columns => '{"priority_id": [1, 2]}'), checked by alerts_columns_match in
-- its statements. The bitmap column may be bit(256) or bit(128), holding the
-- bitmap folded (alerts_bloom(attrs, bits), alerts_mask(filter, bits),
-- alerts_enable(..., bits => 256)).
\echo Use "ALTER EXTENSION alerts UPDATE TO '0.3.0'" to load this file. \quit

ALTER TYPE alerts_backfill_state
    ADD ATTRIBUTE leaves regclass[],
    ADD ATTRIBUTE leaf_blocks bigint[],
    ADD ATTRIBUTE leaf_batches bigint[],
    ADD ATTRIBUTE leaf integer,
    ADD ATTRIBUTE done_blocks bigint,
    ADD ATTRIBUTE citus boolean;

-- text -> SETOF text
DROP FUNCTION alerts_index_command(regclass, name);

CREATE FUNCTION alerts_index_command(rel regclass, bitmap_column name DEFAULT 'attribute_values_bitmap')
    RETURNS SETOF text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    -- Postgres cannot CREATE INDEX CONCURRENTLY on a partitioned table:
    -- there, an invalid index ON ONLY each partitioned table, one built
    -- concurrently on each leaf, each attached to its parent's (the parent's
    -- becomes valid when the last is attached). Every statement is
    -- idempotent, so the list can be run again after an interruption or
    -- after partitions are added.
    WITH tree AS (  -- pg_partition_tree has no row for a table that is not partitioned
        SELECT c.oid AS relid, t.parentrelid, coalesce(t.level, 0) AS level, c.relkind,
               format('%I.%I', n.nspname, left(c.relname, 40) || '_alerts_page_idx') AS idx,
               left(c.relname, 40) || '_alerts_page_idx' AS idx_name
        FROM (SELECT) one
        LEFT JOIN pg_partition_tree(rel) t ON true
        JOIN pg_class c ON c.oid = coalesce(t.relid, rel)
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p')  -- foreign partitions get no index
    ), page AS (  -- the indexes already in the tree of the table's own
        -- (Postgres gives a partition it creates or attaches an index of
        -- that tree, named its own way: nothing to build or attach there)
        SELECT x.indexrelid, x.indrelid
        FROM pg_partition_tree(to_regclass((SELECT idx FROM tree WHERE level = 0))) t
        JOIN pg_index x ON x.indexrelid = t.relid
    ), todo AS (
        SELECT * FROM tree WHERE level = 0 OR relid NOT IN (SELECT indrelid FROM page)
    ), statements AS (
        SELECT CASE WHEN relkind = 'p' THEN 0 ELSE 1 END AS phase, level, relid, 0 AS step,
               format('CREATE INDEX %sIF NOT EXISTS %I ON %s%s (organisation_id, id DESC) INCLUDE (%I)',
                      CASE WHEN relkind = 'r' THEN 'CONCURRENTLY ' ELSE '' END, idx_name,
                      CASE WHEN relkind = 'p' THEN 'ONLY ' ELSE '' END, relid::regclass, bitmap_column) AS statement
        FROM todo
        UNION ALL
        SELECT CASE WHEN c.relkind = 'p' THEN 0 ELSE 1 END, c.level, c.relid, 1,
               format('ALTER INDEX %s ATTACH PARTITION %s',
                      coalesce((SELECT x.indexrelid::regclass::text FROM page x WHERE x.indrelid = p.relid), p.idx), c.idx)
        FROM todo c JOIN tree p ON p.relid = c.parentrelid
    )
    SELECT statement FROM statements ORDER BY phase, level, relid, step
$$;
COMMENT ON FUNCTION alerts_index_command(regclass, name) IS
    'The statements that create the fast-path index: the pagination index (organisation_id, id DESC) with the bitmap INCLUDEd, so alerts_search and filtered pages walk it index-only. One CREATE INDEX CONCURRENTLY for a table; for a partitioned table, an index ON ONLY each partitioned table, one built concurrently on each leaf partition and ALTER INDEX ... ATTACH PARTITION for each. Run them with \gexec: SELECT alerts_index_command(''alerts'') \gexec';


CREATE FUNCTION alerts_search_wire(
    rel anyelement,
    organisation_id text,
    filter jsonb,
    since timestamptz DEFAULT now() - interval '30 days',
    before_id text DEFAULT NULL,
    page_size integer DEFAULT 50,
    columns jsonb DEFAULT NULL
) RETURNS bytea
    AS 'MODULE_PATHNAME', 'alerts_search_wire'
    LANGUAGE c STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION alerts_search_wire(anyelement, text, jsonb, timestamptz, text, integer, jsonb) IS
    'Internal: the page of alerts_search in the binary form a Citus worker sends back for a routed call on a distributed table (the rows'' columns in binary, jsonb in its stored form). Not a stable format: use alerts_search.';

CREATE FUNCTION alerts_jsonb_bytes(value jsonb) RETURNS bytea
    AS 'MODULE_PATHNAME', 'alerts_jsonb_bytes'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 1;
COMMENT ON FUNCTION alerts_jsonb_bytes(jsonb) IS
    'Internal: a jsonb value''s stored form as bytea, in which a Citus worker sends alerts_search''s routed page to the coordinator (moved in binary, not printed and parsed as JSON). Not a stable format: use alerts_search.';

CREATE FUNCTION alerts_columns_match(row_value record, columns jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'alerts_columns_match'
    LANGUAGE c STABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_columns_match(record, jsonb) IS
    'Column filter test on a row (alerts_columns_match(a, ''{"priority_id": [1, 2], "status": "open"}'')): each named column equals the value, or one of the values of an array, by the column type''s equality (null: IS NULL); {} matches every row. The check alerts_search''s columns argument makes.';

-- A column filter argument: the argument list changes, so the function is
-- dropped and created again (a view that calls it must be dropped before
-- the upgrade and created again after it).
DROP FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer);

CREATE FUNCTION alerts_search(
    rel anyelement,
    organisation_id text,
    filter jsonb,
    since timestamptz DEFAULT now() - interval '30 days',
    before_id text DEFAULT NULL,
    page_size integer DEFAULT 50,
    columns jsonb DEFAULT NULL
) RETURNS SETOF anyelement
    AS 'MODULE_PATHNAME', 'alerts_search'
    LANGUAGE c STABLE PARALLEL RESTRICTED ROWS 50;
COMMENT ON FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer, jsonb) IS
    'An exact page of table rel (call as SELECT * FROM alerts_search(NULL::alerts, org, filter)): rows of organisation_id matching filter, newest first, id >= alerts_ulid_floor(since) and id < before_id (NULL: first page), page_size at most; columns => ''{"priority_id": [1, 2]}'' also requires other columns of the row to equal a value or one of several (null: IS NULL), by each column type''s equality. Walks the pagination index (index-only with the bitmap INCLUDEd); once the filter proves rare, switches to the tenant-keys or a GIN index if there is one. Columns by convention: id, organisation_id, attribute_values, attribute_values_bitmap (use a view to rename).';


-- Whether a trigger's arguments (pg_trigger's tgnargs and tgargs, each
-- argument NUL-terminated) name these columns; none mean the trigger
-- function's defaults.
CREATE FUNCTION alerts_trigger_args_match(nargs smallint, args bytea, attrs_column name, bitmap_column name)
    RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN nargs = 0 THEN attrs_column = 'attribute_values' AND bitmap_column = 'attribute_values_bitmap'
                ELSE args = convert_to(attrs_column, getdatabaseencoding()) || '\x00'::bytea
                            || convert_to(bitmap_column, getdatabaseencoding()) || '\x00'::bytea END
$$;
COMMENT ON FUNCTION alerts_trigger_args_match(smallint, bytea, name, name) IS
    'Internal: whether a bloom trigger''s arguments (pg_trigger.tgnargs, tgargs) name these columns (none: the defaults).';

CREATE FUNCTION alerts_citus_table(rel regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found boolean := false;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1)' INTO found USING rel;
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION alerts_citus_table(regclass) IS
    'Internal: whether rel is a Citus table (distributed or reference), whose rows the backfill reaches through its shard placements.';


CREATE OR REPLACE PROCEDURE alerts_disable(
    rel regclass,
    bitmap_column name DEFAULT 'attribute_values_bitmap',
    lock_timeout_ms integer DEFAULT 1000
)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    did boolean := false;
BEGIN
    IF rel IS NULL OR bitmap_column IS NULL OR lock_timeout_ms IS NULL THEN
        RAISE EXCEPTION 'alerts_disable: rel, bitmap_column and lock_timeout_ms must not be NULL'
            USING ERRCODE = 'null_value_not_allowed', HINT = 'CALL alerts_disable(''my_table'')';
    END IF;
    -- a partition's column and trigger belong to its partitioned table
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attname = bitmap_column AND attnum > 0
                                            AND NOT attisdropped AND attinhcount > 0) THEN
        RAISE EXCEPTION 'alerts_disable: % is a partition of %, whose column % it inherits', rel,
            (SELECT inhparent::regclass FROM pg_inherits WHERE inhrelid = rel LIMIT 1), quote_ident(bitmap_column)
            USING ERRCODE = 'wrong_object_type',
                  HINT = format('disable the whole table: CALL alerts_disable(%L), or detach the partition first', pg_partition_root(rel)::text);
    END IF;
    FOR t IN
        SELECT tgname FROM pg_trigger
        WHERE tgrelid = rel AND NOT tgisinternal AND tgfoid = '@extschema@.alerts_bloom_trigger()'::regprocedure
          AND CASE WHEN tgnargs = 0 THEN bitmap_column = 'attribute_values_bitmap'
                   ELSE position('\x00'::bytea || convert_to(bitmap_column, getdatabaseencoding()) || '\x00'::bytea
                                 IN '\x00'::bytea || tgargs) > 0 END
    LOOP
        PERFORM @extschema@.alerts_ddl('alerts_disable', format('DROP TRIGGER %I ON %s', t.tgname, rel), lock_timeout_ms);
        did := true;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attname = bitmap_column AND attnum > 0 AND NOT attisdropped) THEN
        -- drops the indexes that contain the column too; no table rewrite
        PERFORM @extschema@.alerts_ddl('alerts_disable', format('ALTER TABLE %s DROP COLUMN %I', rel, bitmap_column), lock_timeout_ms);
        did := true;
    END IF;
    IF did THEN
        RAISE NOTICE 'alerts_disable: % no longer has column % nor its trigger', rel, quote_ident(bitmap_column);
    ELSE
        RAISE NOTICE 'alerts_disable: % has no column % and no alerts_bloom trigger for it; nothing to do', rel, quote_ident(bitmap_column);
    END IF;
END
$$;
COMMENT ON PROCEDURE alerts_disable(regclass, name, integer) IS
    'Undoes alerts_enable: drops the alerts_bloom trigger(s) writing bitmap_column and the column itself (with the indexes that contain it), each under lock_timeout. No table rewrite.';


DROP FUNCTION alerts_enable_prepare(regclass, name, name, text, integer, integer);
CREATE FUNCTION alerts_enable_prepare(rel regclass, attrs_column name, bitmap_column name, form text,
                                      batch_rows integer, lock_timeout_ms integer, bits integer)
    RETURNS alerts_backfill_state
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st @extschema@.alerts_backfill_state;
    bitmap_generated "char";
    trigger_name name;
    tg_state "char";
    later_trigger name;
    leaf_state "char";
    not_owned regclass;
    off_leaf regclass;
    -- the column was there, plain, with no bitmap trigger: written by a
    -- client encoder (the portable form), whose bitmaps are checked
    adopt boolean := false;
BEGIN
    IF form IS NULL OR form NOT IN ('trigger', 'generated') THEN
        RAISE EXCEPTION 'alerts_enable: form must be ''trigger'' or ''generated'', got %', coalesce(quote_literal(form), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'trigger (the default) backfills in batches with brief locks only; generated rewrites the whole table under an exclusive lock';
    END IF;
    -- every argument is checked before the first DDL changes anything
    IF batch_rows IS NULL OR batch_rows < 1 THEN
        RAISE EXCEPTION 'alerts_enable: batch_rows must be at least 1, got %', coalesce(batch_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = 'the default, 10000 rows per committed batch, suits most tables';
    END IF;
    IF lock_timeout_ms IS NULL OR lock_timeout_ms < 1 THEN
        RAISE EXCEPTION 'alerts_enable: lock_timeout_ms must be at least 1, got %', coalesce(lock_timeout_ms::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = 'the default, 1000 ms, keeps writers waiting at most a second per attempt';
    END IF;
    IF bits IS NOT NULL AND bits NOT IN (128, 256, 512) THEN
        RAISE EXCEPTION 'alerts_enable: bits must be 512, 256 or 128, got %', bits
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = '512 (the default) is the bitmap itself; 256 and 128 hold it folded: smaller, with more false candidates for the exact check to drop';
    END IF;
    bitmap_generated := @extschema@.alerts_check_columns('alerts_enable', rel, attrs_column, bitmap_column);
    IF bitmap_generated IS NOT NULL AND bits IS NOT NULL
       AND bits IS DISTINCT FROM @extschema@.alerts_column_bits(rel, bitmap_column) THEN
        RAISE EXCEPTION 'alerts_enable: column %.% exists with a width of % bits, not the % asked for', rel,
            quote_ident(bitmap_column), @extschema@.alerts_column_bits(rel, bitmap_column), bits
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('CALL alerts_enable(%L) keeps the column as it is; to change its width, CALL alerts_disable(%L) first', rel::text, rel::text);
    END IF;
    bits := coalesce(bits, 512);
    adopt := bitmap_generated IS NOT NULL AND bitmap_generated <> 's';
    IF form = 'trigger' AND coalesce(bitmap_generated, '') <> 's' AND @extschema@.alerts_citus_table(rel)
       AND coalesce(current_setting('citus.enable_unsafe_triggers', true), 'off') <> 'on' THEN
        RAISE EXCEPTION 'alerts_enable: % is a Citus table, where Citus creates triggers only with citus.enable_unsafe_triggers on', rel
            USING ERRCODE = 'feature_not_supported',
                  HINT = format('CALL alerts_enable(%L, form => ''generated'') computes the bitmap on the shards with no setting; or SET citus.enable_unsafe_triggers = on and CALL again (safe for this trigger: it reads and writes only the row being written)', rel::text);
    END IF;
    IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = rel), 'USAGE') THEN
        RAISE EXCEPTION 'alerts_enable: must be owner of table %', rel
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'run it as the table''s owner (or a member of the owning role)';
    END IF;
    -- ALTER TABLE on a partitioned table recurses into every partition
    SELECT t.relid INTO not_owned FROM pg_partition_tree(rel) t JOIN pg_class c ON c.oid = t.relid
    WHERE NOT pg_has_role(c.relowner, 'USAGE') ORDER BY t.level, t.relid LIMIT 1;
    IF not_owned IS NOT NULL THEN
        RAISE EXCEPTION 'alerts_enable: must be owner of partition % of %', not_owned, rel
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('the column and trigger are added to every partition: ALTER TABLE %s OWNER TO %I (as its owner or a superuser), then CALL alerts_enable again',
                                not_owned, (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = rel));
    END IF;
    IF bitmap_generated IS NULL THEN
        IF form = 'trigger' THEN
            PERFORM @extschema@.alerts_ddl('alerts_enable',
                format('ALTER TABLE %s ADD COLUMN %I bit(%s)', rel, bitmap_column, bits), lock_timeout_ms);
            bitmap_generated := '';
        ELSE
            RAISE NOTICE 'alerts_enable: adding a generated column rewrites % under an ACCESS EXCLUSIVE lock', rel;
            PERFORM @extschema@.alerts_ddl('alerts_enable',
                format('ALTER TABLE %s ADD COLUMN %I bit(%s) GENERATED ALWAYS AS (@extschema@.alerts_bloom(%I%s)) STORED',
                       rel, bitmap_column, bits, attrs_column, CASE WHEN bits <> 512 THEN ', ' || bits END), lock_timeout_ms);
            bitmap_generated := 's';
        END IF;
    ELSIF (bitmap_generated = 's') <> (form = 'generated') THEN
        RAISE EXCEPTION 'alerts_enable: column %.% already exists as a % column, not the % form asked for', rel,
            quote_ident(bitmap_column), CASE WHEN bitmap_generated = 's' THEN 'generated' ELSE 'plain' END, form
            USING ERRCODE = 'duplicate_column',
                  HINT = format('CALL alerts_enable(%L, form => %L) to keep it, or CALL alerts_disable(%L) first to switch forms',
                                rel::text, CASE WHEN bitmap_generated = 's' THEN 'generated' ELSE 'trigger' END, rel::text);
    END IF;
    IF bitmap_generated <> 's' THEN
        SELECT t.tgname, t.tgenabled INTO trigger_name, tg_state
        FROM pg_trigger t
        WHERE t.tgrelid = rel AND NOT t.tgisinternal
          AND t.tgfoid = '@extschema@.alerts_bloom_trigger()'::regprocedure
          AND @extschema@.alerts_trigger_args_match(t.tgnargs, t.tgargs, attrs_column, bitmap_column);
        IF trigger_name IS NULL THEN
            trigger_name := CASE WHEN EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = 'alerts_bloom')
                                 THEN left('alerts_bloom_' || bitmap_column, 63) ELSE 'alerts_bloom' END;
            PERFORM @extschema@.alerts_ddl('alerts_enable',
                format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@.alerts_bloom_trigger(%L, %L)',
                       trigger_name, rel, attrs_column, bitmap_column), lock_timeout_ms);
        ELSE
            adopt := false;  -- our trigger wrote them: a resumed backfill
        END IF;
        IF tg_state = 'D' THEN
            RAISE EXCEPTION 'alerts_enable: trigger % on % is disabled: rows written meanwhile may have no bitmap', quote_ident(trigger_name), rel
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I, then CALL alerts_rebuild(%L)', rel, trigger_name, rel::text);
        END IF;
        -- the partitions' clones of the trigger can be disabled, or made to
        -- fire on origin only, one by one: a disabled one first
        SELECT c.tgrelid, c.tgenabled INTO off_leaf, leaf_state
        FROM pg_partition_tree(rel) t JOIN pg_trigger c ON c.tgrelid = t.relid
        WHERE t.relid <> rel AND c.tgname = trigger_name AND c.tgparentid <> 0 AND c.tgenabled <> 'A'
        ORDER BY c.tgenabled = 'D' DESC, t.level, t.relid LIMIT 1;
        IF leaf_state = 'D' THEN
            RAISE EXCEPTION 'alerts_enable: trigger % on partition % of % is disabled: rows written meanwhile may have no bitmap',
                quote_ident(trigger_name), off_leaf, rel
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I, then CALL alerts_rebuild(%L)', off_leaf, trigger_name, rel::text);
        END IF;
        -- An ordinary trigger does not fire in sessions with
        -- session_replication_role = replica (logical replication's apply,
        -- loaders that skip triggers), where an UPDATE would keep the old
        -- bitmap and hide the row from searches: it fires ALWAYS.
        IF tg_state IS DISTINCT FROM 'A' OR leaf_state IS NOT NULL THEN
            PERFORM @extschema@.alerts_ddl('alerts_enable',
                format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', rel, trigger_name), lock_timeout_ms);
            IF tg_state IS NOT NULL THEN
                RAISE NOTICE 'alerts_enable: trigger % on % now fires ALWAYS, also in sessions with session_replication_role = replica', quote_ident(trigger_name), rel;
            END IF;
        END IF;
        -- BEFORE ROW triggers fire in name order: one after ours that
        -- changes the attributes would leave the bitmap of the old ones
        SELECT t.tgname INTO later_trigger
        FROM pg_trigger t
        WHERE t.tgrelid = rel AND NOT t.tgisinternal AND t.tgenabled <> 'D'
          AND t.tgtype & 3 = 3 AND t.tgtype & 20 <> 0  -- ROW, BEFORE; INSERT or UPDATE
          AND t.tgfoid <> '@extschema@.alerts_bloom_trigger()'::regprocedure
          AND t.tgname COLLATE "C" > trigger_name COLLATE "C"
        ORDER BY t.tgname COLLATE "C" LIMIT 1;
        IF later_trigger IS NOT NULL THEN
            RAISE WARNING 'alerts_enable: trigger % on % fires after % (BEFORE triggers fire in name order): if it changes %, the bitmaps it leaves are stale and searches miss those rows',
                quote_ident(later_trigger), rel, quote_ident(trigger_name), quote_ident(attrs_column)
                USING HINT = format('if it does, let the bitmap trigger fire last: ALTER TRIGGER %I ON %s RENAME TO %I, then CALL alerts_rebuild(%L)',
                                    trigger_name, rel, 'zz_' || trigger_name, rel::text);
        END IF;
    END IF;
    -- a column with no bitmap in it yet is filled as a new one would be
    IF adopt THEN
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE %I IS NOT NULL)', rel, bitmap_column) INTO adopt;
    END IF;
    IF adopt THEN
        RAISE NOTICE 'alerts_enable: column %.% was written without the trigger (by a client encoder?): every bitmap is checked, and only those that differ from alerts_bloom are rewritten', rel, quote_ident(bitmap_column);
    END IF;
    st := @extschema@.alerts_backfill_start('alerts_enable', rel, attrs_column, bitmap_column,
                                            bitmap_generated = 's', NOT adopt, batch_rows);
    -- a stored generated column is computed for every row: nothing to backfill
    st.finished := st.finished OR bitmap_generated = 's';
    RETURN st;
END
$$;
COMMENT ON FUNCTION alerts_enable_prepare(regclass, name, name, text, integer, integer, integer) IS
    'Internal: the DDL step of alerts_enable (column and trigger, each under lock_timeout), committed before the backfill starts.';


CREATE OR REPLACE FUNCTION alerts_check_columns(caller text, rel regclass, attrs_column name, bitmap_column name)
    RETURNS "char"
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    attrs_type text;
    bitmap_type text;
    bitmap_generated "char";
    leaf regclass;
    leaf_kind "char";
BEGIN
    -- In an explicit transaction block, now() is the block's start, earlier
    -- than this statement's: the procedures commit, so they cannot run there.
    IF now() <> statement_timestamp() THEN
        RAISE EXCEPTION '%: must be called outside a transaction block: it commits after every batch', caller
            USING ERRCODE = 'active_sql_transaction', HINT = format('run CALL %s(...) on its own, with autocommit on', caller);
    END IF;
    IF rel IS NULL OR attrs_column IS NULL OR bitmap_column IS NULL THEN
        RAISE EXCEPTION '%: rel, attrs_column and bitmap_column must not be NULL', caller
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = format('CALL %s(''my_table'', ''attribute_values'', ''attribute_values_bitmap'')', caller);
    END IF;
    IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%: % is not a table', caller, rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'name the table that stores the alerts, not a view or an index';
    END IF;
    -- A partitioned table: its leaves hold the rows, and the backfill
    -- updates each leaf by name. Checked before anything changes.
    SELECT t.relid, c.relkind INTO leaf, leaf_kind
    FROM pg_partition_tree(rel) t JOIN pg_class c ON c.oid = t.relid
    WHERE t.isleaf AND (c.relkind <> 'r' OR NOT has_table_privilege(t.relid, 'SELECT, UPDATE'))
    ORDER BY t.level, t.relid LIMIT 1;
    IF leaf_kind = 'f' THEN
        RAISE EXCEPTION '%: partition % of % is a foreign table: its rows live on another server, where no bitmap can be written from here', caller, leaf, rel
            USING ERRCODE = 'wrong_object_type',
                  HINT = format('detach it (ALTER TABLE %s DETACH PARTITION %s) and enable the extension on the remote table, or keep foreign partitions out of the alerts table', rel, leaf);
    ELSIF leaf_kind IS NOT NULL AND leaf_kind <> 'r' THEN
        RAISE EXCEPTION '%: partition % of % is not a plain table (relkind %)', caller, leaf, rel, leaf_kind
            USING ERRCODE = 'wrong_object_type', HINT = format('detach it: ALTER TABLE %s DETACH PARTITION %s', rel, leaf);
    ELSIF leaf = rel THEN
        RAISE EXCEPTION '%: permission denied to update table %', caller, rel
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('GRANT SELECT, UPDATE ON %s TO %I, or run it as the table''s owner', rel, current_user);
    ELSIF leaf IS NOT NULL THEN
        RAISE EXCEPTION '%: permission denied to update partition % of %', caller, leaf, rel
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('the backfill updates each partition by name: GRANT SELECT, UPDATE ON %s TO %I, or run it as the partition''s owner', leaf, current_user);
    END IF;
    SELECT format_type(atttypid, atttypmod) INTO attrs_type
    FROM pg_attribute WHERE attrelid = rel AND attname = attrs_column AND attnum > 0 AND NOT attisdropped;
    IF attrs_type IS NULL THEN
        RAISE EXCEPTION '%: table % has no column %', caller, rel, quote_ident(attrs_column)
            USING ERRCODE = 'undefined_column',
                  HINT = format('name the jsonb column that holds the attributes: CALL %s(%L, attrs_column => ''my_column'')', caller, rel::text);
    ELSIF attrs_type <> 'jsonb' THEN
        RAISE EXCEPTION '%: column %.% is %, not jsonb', caller, rel, quote_ident(attrs_column), attrs_type
            USING ERRCODE = 'datatype_mismatch',
                  HINT = format('convert it first: ALTER TABLE %s ALTER COLUMN %I TYPE jsonb USING %I::jsonb', rel, attrs_column, attrs_column);
    END IF;
    SELECT format_type(atttypid, atttypmod), attgenerated INTO bitmap_type, bitmap_generated
    FROM pg_attribute WHERE attrelid = rel AND attname = bitmap_column AND attnum > 0 AND NOT attisdropped;
    IF bitmap_type IS NOT NULL AND @extschema@.alerts_column_bits(rel, bitmap_column) IS NULL THEN
        RAISE EXCEPTION '%: column %.% exists and is %, not bit(512), bit(256), bit(128), or bit varying without a length below 512', caller, rel, quote_ident(bitmap_column), bitmap_type
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'pick another bitmap_column name, or drop that column first';
    END IF;
    RETURN bitmap_generated;
END
$$;
COMMENT ON FUNCTION alerts_check_columns(text, regclass, name, name) IS
    'Internal: checks that alerts_enable / alerts_rebuild run outside a transaction block, and the table and its attributes and bitmap columns.';


CREATE OR REPLACE FUNCTION alerts_backfill_start(caller text, rel regclass, attrs_column name, bitmap_column name,
                                      generated boolean, only_missing boolean, batch_rows integer)
    RETURNS alerts_backfill_state
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    st @extschema@.alerts_backfill_state;
    leaf regclass;
    blocks bigint;
    per_block double precision;
    sampled bigint;
    estimate double precision := 0;
BEGIN
    IF batch_rows IS NULL OR batch_rows < 1 THEN
        RAISE EXCEPTION '%: batch_rows must be at least 1, got %', caller, coalesce(batch_rows::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value', HINT = 'the default, 10000 rows per committed batch, suits most tables';
    END IF;
    st.rel := rel; st.attrs_column := attrs_column; st.bitmap_column := bitmap_column;
    st.generated := generated; st.only_missing := only_missing; st.caller := caller;
    st.leaves := '{}'; st.leaf_blocks := '{}'; st.leaf_batches := '{}';
    st.leaf := 1; st.next_block := 0; st.done_blocks := 0; st.total_blocks := 0;
    st.citus := @extschema@.alerts_citus_table(rel);
    IF st.citus THEN
        -- The rows are in the shard placements. Their sizes are read by the
        -- first step, after the DDL is committed: Citus reads them over
        -- connections of their own, which would wait for this transaction's
        -- locks on the shards. batch_blocks carries batch_rows until then.
        st.leaves := ARRAY[rel]; st.leaf_blocks := ARRAY[NULL::bigint]; st.leaf_batches := ARRAY[NULL::bigint];
        st.batch_blocks := batch_rows;
        st.rows_estimate := 0;
        st.rows_updated := 0;
        st.started := clock_timestamp();
        st.last_report := st.started;
        st.total_blocks := NULL;
        st.finished := false;
        RETURN st;
    END IF;
    -- pg_partition_tree has no row for a table that is not partitioned
    FOR leaf IN SELECT coalesce(t.relid, rel) FROM (SELECT) one LEFT JOIN pg_partition_tree(rel) t ON true
                WHERE t.isleaf IS NOT FALSE ORDER BY t.level, t.relid LOOP
        -- Every row that existed before the trigger was committed lies below
        -- this block; rows written since then got their bitmap from the trigger.
        blocks := pg_relation_size(leaf) / current_setting('block_size')::bigint;
        SELECT CASE WHEN c.relpages > 0 AND c.reltuples >= 0 THEN c.reltuples / c.relpages END INTO per_block
        FROM pg_class c WHERE c.oid = leaf;
        IF per_block IS NULL AND blocks > 0 THEN
            EXECUTE format('SELECT count(*) FROM %s WHERE ctid < %L::tid', leaf, format('(%s,0)', least(blocks, 16)))
                INTO sampled;
            per_block := sampled::double precision / least(blocks, 16);
        END IF;
        per_block := greatest(coalesce(per_block, 1), 1);
        st.leaves := st.leaves || leaf;
        st.leaf_blocks := st.leaf_blocks || blocks;
        st.leaf_batches := st.leaf_batches || greatest(1, ceil(batch_rows / per_block))::bigint;
        st.total_blocks := st.total_blocks + blocks;
        estimate := estimate + per_block * blocks;
    END LOOP;
    -- unused since 0.3.0 (each leaf has its batch in leaf_batches); the
    -- type keeps the attribute, set to the first leaf's batch
    st.batch_blocks := coalesce(st.leaf_batches[1], 1);
    st.rows_estimate := round(estimate)::bigint;
    st.rows_updated := 0;
    st.started := clock_timestamp();
    st.last_report := st.started;
    st.finished := st.total_blocks = 0;
    RETURN st;
END
$$;
COMMENT ON FUNCTION alerts_backfill_start(text, regclass, name, name, boolean, boolean, integer) IS
    'Internal: plans a batched backfill (block ranges of about batch_rows rows, leaf partition by leaf partition) for alerts_enable and alerts_rebuild.';


CREATE OR REPLACE FUNCTION alerts_backfill_step(st alerts_backfill_state)
    RETURNS alerts_backfill_state
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    leaf regclass := st.leaves[st.leaf];
    leaf_end bigint := st.leaf_blocks[st.leaf];
    hi bigint := least(st.next_block + st.leaf_batches[st.leaf], leaf_end);
    n bigint := 0;
    now_ts timestamptz;
    secs double precision;
    done bigint;
    done_rows bigint;
    rate double precision;
    ok boolean;
    failure text;
    placements bigint;
    blocks_sum bigint;
    tuples double precision;
    -- what a batch writes, and to which of its rows
    bits integer := coalesce(@extschema@.alerts_column_bits(st.rel, st.bitmap_column), 512);
    set_clause text := CASE WHEN st.generated THEN format('%1$I = %1$I', st.attrs_column)
                            ELSE format('%I = @extschema@.alerts_bloom(%I, %s)', st.bitmap_column, st.attrs_column, bits) END;
    rows_clause text := CASE WHEN st.only_missing THEN format('%I IS NULL AND %I IS NOT NULL', st.bitmap_column, st.attrs_column)
                             ELSE format('%I IS DISTINCT FROM @extschema@.alerts_bloom(%I, %s)', st.bitmap_column, st.attrs_column, bits) END;
BEGIN
    IF st.citus AND st.total_blocks IS NULL THEN
        -- The first step on a Citus table: the batches walk the same block
        -- range of every placement at once, up to the largest one, with
        -- about batch_rows rows over all of them.
        EXECUTE $q$SELECT coalesce(max(split_part(result, ' ', 1)::bigint), 0), coalesce(sum(split_part(result, ' ', 1)::bigint), 0),
                          coalesce(sum(split_part(result, ' ', 2)::double precision), 0), count(*), bool_and(success)
                   FROM run_command_on_placements($1, $c$SELECT (pg_relation_size('%1$s') / current_setting('block_size')::bigint)
                                                               || ' ' || greatest(reltuples, 0) FROM pg_class WHERE oid = '%1$s'::regclass$c$)$q$
            INTO leaf_end, blocks_sum, tuples, placements, ok USING st.rel;
        IF NOT ok THEN
            RAISE EXCEPTION '%: could not read the size of every shard of %', st.caller, st.rel
                USING ERRCODE = 'connection_failure', HINT = 'check that every worker is up (SELECT * FROM citus_check_cluster_node_health()), then CALL again';
        END IF;
        IF tuples = 0 AND blocks_sum > 0 THEN  -- never analyzed: count
            EXECUTE format('SELECT count(*) FROM %s', st.rel) INTO tuples;
        END IF;
        st.leaf_blocks := ARRAY[leaf_end];
        st.leaf_batches := ARRAY[greatest(1, ceil(st.batch_blocks / greatest(tuples / greatest(blocks_sum, 1), 1)
                                                  / greatest(placements, 1)))::bigint];
        st.batch_blocks := st.leaf_batches[1];
        st.total_blocks := leaf_end;
        st.rows_estimate := round(tuples)::bigint;
        st.finished := leaf_end = 0;
        RETURN st;
    END IF;
    IF st.citus THEN
        -- every placement's rows of the block range, in one command per
        -- placement (run_command_on_placements puts its name for %s)
        EXECUTE $q$SELECT coalesce(sum(result::bigint) FILTER (WHERE success), 0), bool_and(success),
                          min(result) FILTER (WHERE NOT success)
                   FROM run_command_on_placements($1, $2)$q$
            INTO n, ok, failure
            USING st.rel, format('WITH u AS (UPDATE %%s SET %s WHERE ctid >= %L::tid AND ctid < %L::tid AND %s RETURNING 1) SELECT count(*) FROM u',
                                 set_clause, format('(%s,0)', st.next_block), format('(%s,0)', hi), rows_clause);
        IF NOT ok THEN
            RAISE EXCEPTION '%: a batch failed on a shard of %: %', st.caller, st.rel, failure
                USING ERRCODE = 'external_routine_exception', HINT = 'fix the cause and CALL again: the batches done are kept';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM pg_class WHERE oid = leaf) THEN
        EXECUTE format('UPDATE %s SET %s WHERE ctid >= $1::tid AND ctid < $2::tid AND %s', leaf, set_clause, rows_clause)
            USING format('(%s,0)', st.next_block), format('(%s,0)', hi);
        GET DIAGNOSTICS n = ROW_COUNT;
    ELSE
        hi := leaf_end;  -- dropped since the start: nothing left to write there
    END IF;
    st.rows_updated := st.rows_updated + n;
    st.next_block := hi;
    IF hi >= leaf_end THEN
        st.done_blocks := st.done_blocks + leaf_end;
        st.leaf := st.leaf + 1;
        st.next_block := 0;
    END IF;
    st.finished := st.leaf > coalesce(array_length(st.leaves, 1), 0);
    now_ts := clock_timestamp();
    IF st.finished OR now_ts - st.last_report >= interval '2 seconds' THEN
        done := st.done_blocks + st.next_block;
        secs := greatest(extract(epoch FROM now_ts - st.started)::double precision, 0.001);
        done_rows := CASE WHEN st.total_blocks = 0 THEN 0
                          ELSE round(st.rows_estimate * (done::double precision / st.total_blocks))::bigint END;
        rate := done_rows / secs;
        RAISE NOTICE '%: %: % of ~% rows (% %%), % rows/s, % s elapsed, about % s left; % bitmaps written',
            st.caller, st.rel, done_rows, st.rows_estimate,
            CASE WHEN st.total_blocks = 0 THEN 100 ELSE floor(100.0 * done / st.total_blocks) END,
            round(rate), round(secs::numeric, 1),
            CASE WHEN rate > 0 THEN round(((st.rows_estimate - done_rows) / rate)::numeric) ELSE 0 END,
            st.rows_updated;
        st.last_report := now_ts;
    END IF;
    RETURN st;
END
$$;
COMMENT ON FUNCTION alerts_backfill_step(alerts_backfill_state) IS
    'Internal: one committed batch of alerts_enable / alerts_rebuild over one leaf''s block range; updates only the rows whose bitmap is missing (enable) or wrong (rebuild).';


CREATE OR REPLACE FUNCTION alerts_backfill_finish(st alerts_backfill_state)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    wrong bigint;
    has_index boolean;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s WHERE %I IS DISTINCT FROM @extschema@.alerts_bloom(%I, %s)',
                   st.rel, st.bitmap_column, st.attrs_column,
                   coalesce(@extschema@.alerts_column_bits(st.rel, st.bitmap_column), 512)) INTO wrong;
    IF wrong > 0 THEN
        RAISE EXCEPTION '%: % rows of % still have a missing or wrong bitmap after the backfill', st.caller, wrong, st.rel
            USING ERRCODE = 'data_exception',
                  HINT = format('is the bitmap trigger disabled or another trigger rewriting %I? Check with \d %s, then CALL @extschema@.alerts_rebuild(%L)',
                                st.attrs_column, st.rel, st.rel::text);
    END IF;
    RAISE NOTICE '%: % is ready: % bitmaps written in % s, every row checked', st.caller, st.rel, st.rows_updated,
        round(extract(epoch FROM clock_timestamp() - st.started)::numeric, 1);
    IF st.rows_updated > 0 THEN
        RAISE NOTICE '%: now run VACUUM (ANALYZE) %: each bitmap written left a dead row version, and index-only walks need the visibility map', st.caller, st.rel;
    END IF;
    SELECT EXISTS (
        SELECT 1 FROM pg_index i
        WHERE i.indrelid = st.rel
          AND (SELECT attname FROM pg_attribute WHERE attrelid = st.rel AND attnum = i.indkey[0]) = 'organisation_id'
          AND (SELECT attname FROM pg_attribute WHERE attrelid = st.rel AND attnum = i.indkey[1]) = 'id'
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = st.rel AND a.attname = st.bitmap_column
                      AND a.attnum = ANY (i.indkey::int2[])))
    INTO has_index;
    IF NOT has_index AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = st.rel AND attname = 'organisation_id' AND NOT attisdropped)
                     AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = st.rel AND attname = 'id' AND NOT attisdropped) THEN
        IF (SELECT relkind FROM pg_class WHERE oid = st.rel) = 'p' THEN
            RAISE NOTICE '%: for the index-only fast path, run outside a transaction: SELECT alerts_index_command(%s) \gexec (an index on each partition, built concurrently, attached to the table''s)',
                st.caller, concat_ws(', ', quote_literal(st.rel::text),
                                     CASE WHEN st.bitmap_column <> 'attribute_values_bitmap' THEN quote_literal(st.bitmap_column) END);
        ELSE
            RAISE NOTICE '%: for the index-only fast path, run outside a transaction: %', st.caller,
                (SELECT c FROM @extschema@.alerts_index_command(st.rel, st.bitmap_column) c);
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION alerts_backfill_finish(alerts_backfill_state) IS
    'Internal: checks every row''s bitmap after alerts_enable / alerts_rebuild and suggests the fast-path index.';


CREATE OR REPLACE FUNCTION alerts_bloom_stats(
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
DECLARE
    bits integer;
    capacity integer;
    tg_rel regclass;
    tg_name name;
    tg_state "char";
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
    bits := coalesce(@extschema@.alerts_column_bits(rel, bitmap_column), 512);
    EXECUTE format(
        'WITH r AS (
             SELECT @extschema@.alerts_bloom_elements(%2$I) AS n,
                    bit_count(%3$I) AS fill,
                    %3$I IS NULL AND %2$I IS NOT NULL AS missing,
                    %3$I IS DISTINCT FROM @extschema@.alerts_bloom(%2$I, %5$s) AS stale
             FROM %1$s %4$s)
         SELECT count(*), avg(n)::float8, (percentile_disc(0.99) WITHIN GROUP (ORDER BY n))::int, max(n)::int,
                avg(fill)::float8 / %5$s, NULL::float8, count(*) FILTER (WHERE missing), count(*) FILTER (WHERE stale), NULL::text
         FROM r', rel, attrs_column, bitmap_column,
        CASE WHEN sample_percent < 100 THEN format('TABLESAMPLE SYSTEM (%s)', sample_percent) ELSE '' END, bits)
    INTO rows, elements_mean, elements_p99, elements_max, bitmap_fill_mean, expected_fp_rate_p99,
         rows_without_bitmap, stale_bitmaps, advice;
    expected_fp_rate_p99 := power(1 - exp(-7.0 * coalesce(elements_p99, 0) / bits), 7);
    -- the bloom trigger of these columns, on the table or a partition, when
    -- it does not fire in every session (pg_partition_tree has no row for a
    -- table that is not partitioned)
    SELECT c.tgrelid, c.tgname, c.tgenabled INTO tg_rel, tg_name, tg_state
    FROM (SELECT) one
    LEFT JOIN pg_partition_tree(rel) t ON true
    JOIN pg_trigger c ON c.tgrelid = coalesce(t.relid, rel)
    WHERE NOT c.tgisinternal AND c.tgenabled <> 'A'
      AND c.tgfoid = '@extschema@.alerts_bloom_trigger()'::regprocedure
      AND @extschema@.alerts_trigger_args_match(c.tgnargs, c.tgargs, attrs_column, bitmap_column)
    ORDER BY coalesce(t.level, 0), c.tgrelid LIMIT 1;
    -- elements a bitmap of this width holds at a 1% false-positive rate
    capacity := floor(-bits / 7.0 * ln(1 - power(0.01, 1 / 7.0)))::integer;
    advice := concat_ws(' ',
        CASE WHEN elements_p99 > capacity THEN format(
            'WARNING: 1%% of rows carry %s or more attribute elements, more than the ~%s a bit(%s) bitmap holds at a 1%% false-positive rate; a single-value test on them passes by chance %s%% of the time. Pages stay exact but read more rows. %sMove high-cardinality attributes (ids, free text) out of %I into their own columns.',
            elements_p99, capacity, bits, round((expected_fp_rate_p99 * 100)::numeric, 1),
            CASE WHEN bits < 512 THEN 'A wider bitmap column holds more (bit(512) about 53). ' ELSE '' END, attrs_column) END,
        CASE WHEN rows_without_bitmap > 0 THEN format(
            '%s rows have no bitmap: backfill them with CALL @extschema@.alerts_enable(%L, %L, %L) (batched, resumable) and check that the trigger is enabled.',
            rows_without_bitmap, rel::text, attrs_column, bitmap_column) END,
        CASE WHEN stale_bitmaps > rows_without_bitmap THEN format(
            '%s bitmaps do not match their attributes (written by another format version or without the trigger): rebuild them with CALL @extschema@.alerts_rebuild(%L, %L, %L).',
            stale_bitmaps - rows_without_bitmap, rel::text, attrs_column, bitmap_column) END,
        CASE WHEN tg_state = 'D' THEN format(
            'Trigger %I on %s is disabled: rows written now get no bitmap, and an UPDATE keeps the old one, which hides the row from searches. ALTER TABLE %s ENABLE ALWAYS TRIGGER %I, then CALL @extschema@.alerts_rebuild(%L).',
            tg_name, tg_rel, tg_rel, tg_name, rel::text)
             WHEN tg_state IS NOT NULL THEN format(
            'Trigger %I on %s does not fire in sessions with session_replication_role = replica (logical replication''s apply, loaders that skip triggers), where an UPDATE keeps the old bitmap, which hides the row from searches: ALTER TABLE %s ENABLE ALWAYS TRIGGER %I (CALL @extschema@.alerts_enable does).',
            tg_name, tg_rel, tg_rel, tg_name) END);
    IF advice = '' THEN
        advice := 'ok: bitmaps are complete, current, and below 1% false positives for 99% of rows';
    END IF;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION alerts_bloom_stats(regclass, name, name, double precision) IS
    'Sizing report of a table''s bitmaps: rows, attribute elements per row (mean, p99, max), bitmap fill, the expected false-positive rate at p99, rows without a bitmap (NULL attributes excepted) or with a stale one, and plain-language advice. sample_percent < 100 reads a TABLESAMPLE SYSTEM sample.';


DROP PROCEDURE alerts_enable(regclass, name, name, text, integer, integer);
CREATE PROCEDURE alerts_enable(
    rel regclass,
    attrs_column name DEFAULT 'attribute_values',
    bitmap_column name DEFAULT 'attribute_values_bitmap',
    form text DEFAULT 'trigger',
    batch_rows integer DEFAULT 10000,
    lock_timeout_ms integer DEFAULT 1000,
    bits integer DEFAULT NULL
)
    LANGUAGE plpgsql
AS $$
-- No SET clause here: a procedure with one cannot COMMIT. Everything that
-- resolves names runs in the schema-qualified helpers, which pin search_path.
DECLARE
    st @extschema@.alerts_backfill_state;
BEGIN
    st := @extschema@.alerts_enable_prepare(rel, attrs_column, bitmap_column, form, batch_rows, lock_timeout_ms, bits);
    COMMIT;
    CALL @extschema@.alerts_backfill_run(st);
END
$$;
COMMENT ON PROCEDURE alerts_enable(regclass, name, name, text, integer, integer, integer) IS
    'Enables the extension on an existing table: adds the bitmap column (bit(512), or bits => 256 or 128 for a narrower one holding the bitmap folded; an existing column keeps its width) and the alerts_bloom trigger (form => ''trigger'', default; brief locks only) or a stored generated column (form => ''generated''; rewrites the table under an exclusive lock), then backfills the missing bitmaps in committed batches of batch_rows, reporting progress; a column that already holds bitmaps but has no trigger (written by a client encoder) has every bitmap checked and only those that differ rewritten. Resumable: CALL it again after an interruption. Must run outside a transaction block.';


CREATE FUNCTION alerts_bloom(attrs jsonb, bits integer) RETURNS bit
    AS 'MODULE_PATHNAME', 'alerts_bloom_bits'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_bloom(jsonb, integer) IS
    'The bitmap at a bitmap column''s width: 512 gives alerts_bloom(attrs); 256 and 128 give it folded (bit p of the 512 is bit p mod bits), for bit(256) and bit(128) columns: smaller, with more false candidates for the exact check to drop.';


CREATE FUNCTION alerts_mask(filter jsonb, bits integer) RETURNS bit
    AS 'MODULE_PATHNAME', 'alerts_mask_bits'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE COST 50;
COMMENT ON FUNCTION alerts_mask(jsonb, integer) IS
    'The mask of alerts_mask(filter) at a bitmap column''s width (512, 256 or 128), folded as alerts_bloom(attrs, bits) folds the bitmap: a row of a bit(256) column may match when bitmap & alerts_mask(filter, 256) = alerts_mask(filter, 256).';


CREATE FUNCTION alerts_column_bits(rel regclass, bitmap_column name) RETURNS integer
    AS 'MODULE_PATHNAME', 'alerts_column_bits'
    LANGUAGE c STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_column_bits(regclass, name) IS
    'The width of a table''s bitmap column, the one the trigger writes: 512, 256 or 128 for bit(512), bit(256), bit(128), 512 for bit varying (unconstrained or at least 512 long); NULL when the column is missing or of another type.';

COMMENT ON FUNCTION alerts_bloom_match(bit, jsonb) IS
    'Fast probabilistic filter test on a bitmap (bit(512), or folded to bit(256) or bit(128)): false means the row cannot match, true that it may (confirm with alerts_attrs_match). The filter is compiled once per query; the per-row test allocates nothing.';

COMMENT ON FUNCTION alerts_bloom_elements(jsonb) IS
    'Number of attribute:value elements alerts_bloom hashes for these attributes (at a 1% false-positive rate a bit(512) bitmap holds about 53, bit(256) 26, bit(128) 13).';

COMMENT ON FUNCTION alerts_bloom_trigger() IS
    'BEFORE INSERT OR UPDATE row trigger: sets the bitmap column (bit(512), or bit(256) / bit(128) holding it folded) from the jsonb attributes column. Arguments: (attributes column, bitmap column), default (attribute_values, attribute_values_bitmap).';

-- created_at windows: the declaration of how ids follow created_at
CREATE FUNCTION alerts_ulid_near(id text, at timestamptz, within interval) RETURNS boolean
    AS 'MODULE_PATHNAME', 'alerts_ulid_near'
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_ulid_near(text, timestamptz, interval) IS
    'Whether id is a ULID in canonical form (uppercase) whose time is within `within` of `at`. As a table''s CHECK (alerts_ulid_near(id, created_at, interval ''5 minutes'')) it declares how ids follow created_at: plain SQL bounded by created_at then walks only the ids that bound allows.';

CREATE FUNCTION alerts_ulid_bound(ts timestamptz, within interval, upper boolean, declared oid) RETURNS text
    AS 'MODULE_PATHNAME', 'alerts_ulid_bound'
    LANGUAGE c STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION alerts_ulid_bound(timestamptz, interval, boolean, oid) IS
    'The bound on id that a bound on created_at implies under the alerts_ulid_near constraint `declared` (id >= it for created_at >= ts; id < it for created_at <= ts, upper); NULL when that constraint does not hold for every row the snapshot sees. Used by the custom scan''s plans.';
