# A lone alerts_search call through the coordinator, planned as its routed
# statement (src/routed_plan/): Custom Scan (AlertsRouted) over Citus'
# router plan, exact page by page against the exact filter with literal
# arguments and with parameters (a cursor that may be NULL), the
# function's own ERRORs for wrong values, the function planned where the
# rows could differ, and the EXECUTE privilege still checked. Sourced by
# tests/shell/citus.sh (its cluster, `at`, `fail`, the filters table and
# citus_oracle).

echo "citus: a lone alerts_search call planned as its routed statement"
plan_of() {  # SQL [SETTING]: the top node of the statement's plan on the coordinator
  at "$C" -c "${2:-RESET alerts.routed_plan}" -c "EXPLAIN (COSTS OFF) $1" | head -1 | sed 's/^ *//'
}
lone="SELECT * FROM alerts_search(NULL::alerts, 'org1', '{\"env\": \"prod\"}')"
[ "$(plan_of "$lone")" = "Custom Scan (AlertsRouted)" ] || fail "a lone call is not planned as its routed statement: $(plan_of "$lone")"
[ "$(plan_of "SELECT id, attribute_values FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', '01Z', 7)")" = "Custom Scan (AlertsRouted)" ] \
  || fail "a next page of chosen columns is not planned as its routed statement"
for q in "$lone" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}', columns => '{\"source_id\": 1}')" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}') WHERE source_id = 1" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}', clock_timestamp() - interval '1 day')" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}') WITH ORDINALITY" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '[1]')" \
         "SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}', page_size => 0)"; do
  setting="RESET alerts.routed_plan"; [ "$q" = "$lone" ] && setting="SET alerts.routed_plan = off"
  top=$(plan_of "$q" "$setting")
  [ "$top" = "Function Scan on alerts_search" ] || fail "planned as the routed statement, want the function: $q ($setting): $top"
done
echo "  EXPLAIN: Custom Scan (AlertsRouted) for a lone call; the function for a column filter, a WHERE, a volatile window, ORDINALITY, a wrong argument, or the setting off"

# Page by page, every tenant x filter of the differential, against the
# exact filter: literal arguments (each page planned anew) and parameters
# (EXECUTE ... USING: the cursor a parameter that is NULL on a first page).
at "$C" >/dev/null <<'SQL'
CREATE OR REPLACE FUNCTION citus_routed_differential(max_pages int, by_params boolean)
RETURNS TABLE (filters bigint, pages bigint, mismatched_pages bigint) LANGUAGE plpgsql AS $$
DECLARE
    r record; row record; o text; oracle text[]; page text[]; cursor_id text; n int; size int;
    total_pages bigint := 0; bad bigint := 0; checked bigint := 0;
BEGIN
    FOR o IN SELECT DISTINCT organisation_id FROM alerts ORDER BY 1 LOOP
        FOR r IN SELECT * FROM filters fl WHERE fl.n % 8 = substr(o, 4)::int % 8 OR fl.n % 4 = 0 ORDER BY fl.n LOOP
            size := (ARRAY[50, 1, 7, 500])[1 + r.n % 4];
            oracle := citus_oracle(o, r.f, r.since);
            cursor_id := NULL; n := 0;
            LOOP
                page := '{}';
                IF by_params THEN
                    FOR row IN EXECUTE 'SELECT * FROM alerts_search(NULL::alerts, $1, $2, $3, $4, $5)'
                               USING o, r.f, r.since, cursor_id, size LOOP
                        page := page || row.id;
                    END LOOP;
                ELSE
                    FOR row IN EXECUTE format('SELECT * FROM alerts_search(NULL::alerts, %L, %L, %L, %L, %s)',
                                              o, r.f, r.since, cursor_id, size) LOOP
                        page := page || row.id;
                    END LOOP;
                END IF;
                IF page IS DISTINCT FROM coalesce(oracle[n * size + 1 : n * size + size], '{}') THEN
                    bad := bad + 1;
                END IF;
                n := n + 1;
                EXIT WHEN cardinality(page) < size OR n >= max_pages;
                cursor_id := page[size];
            END LOOP;
            total_pages := total_pages + n; checked := checked + 1;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT checked, total_pages, bad;
END $$;
SQL
for by_params in false true; do
  out=$(at "$C" -c "SELECT filters || ' ' || pages || ' ' || mismatched_pages FROM citus_routed_differential(6, $by_params)")
  read -r nf np nbad <<<"$out"
  [ "$nbad" = 0 ] || fail "routed plan (parameters: $by_params): $nbad of $np pages differ from the exact filter"
  [ "$np" -gt 500 ] || fail "routed plan (parameters: $by_params): only $np pages checked"
  echo "  $( [ "$by_params" = true ] && echo "parameters" || echo "literals"): $nf tenant x filter pairs, $np pages, all equal to the exact filter"
done
usingq="EXECUTE 'EXPLAIN (COSTS OFF) SELECT * FROM alerts_search(NULL::alerts, \$1, \$2, \$3, \$4, \$5)'"
top=$(at "$C" -c "DO \$\$ DECLARE l text; BEGIN FOR l IN $usingq USING 'org1'::text, '{}'::jsonb, now(), NULL::text, 7 LOOP RAISE NOTICE '%', l; EXIT; END LOOP; END \$\$" 2>&1 | grep -o "Custom Scan (AlertsRouted)" || true)
[ -n "$top" ] || fail "a call with parameters is not planned as its routed statement"

# one statement sent, and a prepared statement on its generic plan exact
sent_now=$(at "$C" -c "SET citus.log_remote_commands = on" -c "SET client_min_messages = log" -c "$lone" 2>&1 | grep -E "issuing .*alerts_attrs_match" || true)
[ "$(grep -c . <<<"$sent_now")" = 1 ] || fail "a lone call sent, want one statement: $sent_now"
want=$(at "$C" -c "SELECT md5(string_agg(id, ',' ORDER BY id DESC)) FROM (SELECT id FROM alerts WHERE organisation_id = 'org2' AND alerts_attrs_match(attribute_values, '{\"env\": \"prod\"}') ORDER BY id DESC LIMIT 77) s")
got=$(at "$C" <<'SQL'
SET client_min_messages = warning;
SET plan_cache_mode = force_generic_plan;
PREPARE pages(text, jsonb, text, int) AS SELECT * FROM alerts_search(NULL::alerts, $1, $2, '-infinity', $3, $4);
CREATE TEMP TABLE got (id text);
DO $$
DECLARE c text; r record; i int;
BEGIN
  FOR i IN 1..11 LOOP
    FOR r IN EXECUTE format('EXECUTE pages(%L, %L, %L, 7)', 'org2', '{"env": "prod"}', c) LOOP
      INSERT INTO got VALUES (r.id); c := r.id;
    END LOOP;
  END LOOP;
END $$;
SELECT md5(string_agg(id, ',' ORDER BY id DESC)) FROM got;
SQL
)
[ "$got" = "$want" ] || fail "a prepared lone call on its generic plan, paged 11 times: $got, want $want"
echo "  one statement sent a call; a prepared statement on its generic plan paged 11 times: exact"

# the function's ERRORs for values only known when the plan runs
for args in "NULL::text, '{}'::jsonb, now(), NULL::text, 7|must not be NULL" \
            "'org1'::text, '{}'::jsonb, now(), NULL::text, 0|page_size must be at least 1" \
            "'org1'::text, '[1]'::jsonb, now(), NULL::text, 7|alerts_search: the filter must be a JSON object" \
            "'org1'::text, '{}'::jsonb, 'infinity'::timestamptz, NULL::text, 7|since is after the last time a ULID can hold"; do
  err=$(at "$C" -c "DO \$\$ DECLARE r record; BEGIN FOR r IN EXECUTE 'SELECT * FROM alerts_search(NULL::alerts, \$1, \$2, \$3, \$4, \$5)' USING ${args%%|*} LOOP END LOOP; END \$\$" 2>&1 || true)
  grep -qF "${args#*|}" <<<"$err" || fail "parameters ${args%%|*}: want '${args#*|}', got: $err"
done
echo "  parameters with wrong values: the function's own ERRORs"

# EXECUTE revoked: planned as the function for that role, also a statement
# prepared by a role that had it
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
DROP ROLE IF EXISTS routed_reader;
CREATE ROLE routed_reader;
GRANT SELECT ON alerts TO routed_reader;
REVOKE EXECUTE ON FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer, jsonb) FROM PUBLIC;
SQL
err=$(at "$C" -c "PREPARE q AS SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}')" -c "EXECUTE q" \
        -c "SET ROLE routed_reader" -c "EXECUTE q" 2>&1 || true)
at "$C" >/dev/null <<'SQL'
SET client_min_messages = warning;
GRANT EXECUTE ON FUNCTION alerts_search(anyelement, text, jsonb, timestamptz, text, integer, jsonb) TO PUBLIC;
DROP OWNED BY routed_reader; DROP ROLE routed_reader;
SQL
grep -q "permission denied for function alerts_search" <<<"$err" || fail "a role without EXECUTE ran a routed plan: $err"
echo "  a role without EXECUTE on alerts_search: permission denied, also on a statement another role prepared"

# a column added and dropped between two calls of one session: each call
# planned from the table as it is then (the parsed page is kept per
# relcache epoch)
out=$(at "$C" <<'SQL'
SET client_min_messages = warning;
SELECT id IS NOT NULL FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', page_size => 1);
ALTER TABLE alerts ADD COLUMN note text DEFAULT 'added';
SELECT note FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', page_size => 1);
EXPLAIN (COSTS OFF) SELECT note FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', page_size => 1);
ALTER TABLE alerts DROP COLUMN note;
SELECT * FROM alerts_search(NULL::alerts, 'org1', '{}', '-infinity', page_size => 1);
SQL
)
want_row=$(at "$C" -c "SELECT * FROM alerts WHERE organisation_id = 'org1' ORDER BY id DESC LIMIT 1")
[ "$(sed -n 2p <<<"$out")" = added ] && grep -q "Custom Scan (AlertsRouted)" <<<"$out" && [ "$(sed -n '$p' <<<"$out")" = "$want_row" ] \
  || fail "a column added between two calls of a session: $out"
echo "  a column added, then dropped, between calls of one session: each call planned from the table as it is"
