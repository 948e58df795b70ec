# Sourced by tests/shell/citus.sh (its cluster, `at`, `fail`, $C, $W1, $db,
# and $theirs: a tenant whose shard worker 1 does not hold).
# A routed call is recognised by Citus' catalog, never by what a role can
# set: with application_name claiming an internal connection of Citus, a
# call on worker 1 for a tenant whose shard it does not hold must not read a
# local table of the shard's name (an orphaned placement after a move, here
# planted with a row of its own). The call gives the coordinator's page, or
# Citus refuses it ("cannot execute a distributed query from a query on a
# shard"); anything else fails. Only a statement that reads that relation
# itself (a router query Citus planned before a move, reaching the old
# node after it) reads it: nothing beyond the statement's own SELECT.
echo "citus: a spoofed application_name reads no orphaned placement"
orphan=$(at "$W1" -c "SELECT shard_name('alerts', get_shard_id_for_distribution_column('alerts', '$theirs'), false)")
# the role through the coordinator (Citus creates it on every node)
at "$C" >/dev/null <<SQL
SET client_min_messages = warning;
DROP ROLE IF EXISTS citus_spoofer;
CREATE ROLE citus_spoofer LOGIN;
GRANT SELECT ON alerts TO citus_spoofer;
SQL
at "$W1" >/dev/null <<SQL
SET citus.override_table_visibility = off;
SET citus.enable_ddl_propagation = off;
CREATE TABLE $orphan (LIKE alerts INCLUDING ALL);
INSERT INTO $orphan (id, organisation_id, created_at, source_id) VALUES ('7ZZZZZZZZZZZZZZZZZZZZORPHAN', '$theirs', now(), 1);
SQL
true_page=$(at "$C" -c "SELECT string_agg(id, ',') FROM alerts_search(NULL::alerts, '$theirs', '{}', '-infinity', NULL, 5)")
for who in postgres citus_spoofer; do
  for app in "citus_internal gpid=10000000001" "citus_rebalancer gpid=10000000001" "citus"; do
    got=$(PGAPPNAME="$app" psql -X -q -At -h /tmp -p "$W1" -U "$who" -d "$db" \
            -c "SELECT string_agg(id, ',') FROM alerts_search(NULL::alerts, '$theirs', '{}', '-infinity', NULL, 5)" 2>&1 || true)
    case "$got" in
      *ORPHAN*) fail "worker $W1 as $who, application_name '$app': the page read the orphaned $orphan" ;;
      "$true_page"|*"cannot execute a distributed query from a query on a shard"*) ;;
      *) fail "worker $W1 as $who, application_name '$app': unexpected answer: $got" ;;
    esac
  done
done
# a statement that reads the relation itself gets its rows, as its own
# SELECT does; the plain role may not read the planted table at all
own="SELECT (SELECT string_agg(id, ',') FROM alerts_search(NULL::alerts, '$theirs', '{}', '-infinity', NULL, 5)),
            (SELECT string_agg(id, ',') FROM (SELECT id FROM $orphan WHERE organisation_id = '$theirs' ORDER BY id DESC LIMIT 5) o)"
got=$(at "$W1" -c "SET citus.override_table_visibility = off" -c "$own" | tail -1)
[ "${got%%|*}" = "${got#*|}" ] && [[ "$got" == 7ZZZZZZZZZZZZZZZZZZZZORPHAN* ]] \
  || fail "worker $W1, a statement reading $orphan itself: its page is not that relation's rows: $got"
got=$(psql -X -q -At -h /tmp -p "$W1" -U citus_spoofer -d "$db" -c "$own" 2>&1 || true)
[[ "$got" == *"permission denied for table ${orphan#*.}"* ]] || fail "citus_spoofer read the planted $orphan: $got"
at "$W1" -c "SET citus.enable_ddl_propagation = off" -c "DROP TABLE $orphan"
at "$C" -c "REVOKE SELECT ON alerts FROM citus_spoofer" -c "DROP ROLE citus_spoofer"
echo "  no page shows the orphan's row, as postgres or a plain role, under three application_names,"
echo "  but to a statement that reads that relation itself"

