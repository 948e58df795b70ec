#!/usr/bin/env bash
# Replicas. A primary of its own (wal_level = logical, port PGPORT+20), a
# streaming standby made with pg_basebackup -R (port PGPORT+21), and a
# logical subscriber database on the primary:
# - on the standby, while the primary writes, alerts_search pages equal the
#   exact filter, alerts_attrs_match on every row (same statement, same
#   snapshot; query.sql checks alerts_attrs_match against jsonb containment) and alerts_bloom_stats finds
#   every bitmap current; once it has caught up, its pages equal the
#   primary's;
# - logically replicated tables have right bitmaps on the subscriber with
#   both forms: the trigger form copies the publisher's bitmaps (or, for a
#   publisher without them, needs the trigger ENABLE ALWAYS, and
#   alerts_bloom_stats says so when it is not); a stored generated column is
#   computed by the subscriber.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
libdir=$("$PG_CONFIG" --pkglibdir)
if [ ! -e "$libdir/libpqwalreceiver.so" ]; then
  echo "SKIPPED: replication tests (PostgreSQL $PG_VERSION here has no libpqwalreceiver: no standby or subscription can connect)"
  exit 0
fi
P=$((PGPORT + 20)) S=$((PGPORT + 21))
root=/tmp/alerts-repl-$PGPORT
stop_all() {
  for d in "$root/standby" "$root/primary"; do
    [ -d "$d" ] && as_pg "$PG_BINDIR/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
  done
}
trap stop_all EXIT
stop_all
rm -rf "$root"; mkdir -p "$root"; chown postgres:postgres "$root"
as_pg "$PG_BINDIR/initdb" -D "$root/primary" -U postgres -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
cat >> "$root/primary/postgresql.conf" <<CONF
port = $P
unix_socket_directories = '/tmp'
listen_addresses = ''
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
shared_buffers = 128MB
fsync = off
CONF
as_pg "$PG_BINDIR/pg_ctl" -D "$root/primary" -l "$root/primary.log" -w start >/dev/null
p() { q -p "$P" "$@"; }
pa() { qa -p "$P" "$@"; }
sa() { qa -p "$S" "$@"; }

createdb -p "$P" src
p -d src <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION alerts;
CREATE TABLE alerts (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL);
INSERT INTO alerts SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'org' || (g % 4),
    jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 13), 'n', g % 7)
FROM generate_series(1, 30000) g;
CALL alerts_enable('alerts');
SELECT alerts_index_command('alerts') \gexec
VACUUM ANALYZE alerts;
SQL

# --- physical standby ---------------------------------------------------------
as_pg "$PG_BINDIR/pg_basebackup" -h /tmp -p "$P" -U postgres -D "$root/standby" -R -X stream -c fast >/dev/null
echo "port = $S" >> "$root/standby/postgresql.conf"
as_pg "$PG_BINDIR/pg_ctl" -D "$root/standby" -l "$root/standby.log" -w start >/dev/null
for _ in $(seq 1 600); do [ "$(sa -d src -c "SELECT pg_is_in_recovery()" 2>/dev/null)" = t ] && break; sleep 0.1; done

# The writer: rows of every tenant, new ids and old ones, one per transaction.
p -d src -c "CREATE TABLE writer_stop (stop boolean)"
psql -X -q -p "$P" -d src >/dev/null 2>&1 <<'SQL' &
DO $$ BEGIN
    FOR i IN 1..100000 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM writer_stop);
        INSERT INTO alerts VALUES (alerts_ulid(timestamptz '2026-01-01' + random() * interval '40 days'), 'org' || (i % 4),
                                   jsonb_build_object('env', 'e' || (i % 5), 'svc', 's' || (i % 13), 'n', i % 7, 'w', i));
        UPDATE alerts SET attribute_values = attribute_values || '{"env": "e9"}' WHERE id = (SELECT max(id) FROM alerts WHERE organisation_id = 'org1');
        COMMIT;
        PERFORM pg_sleep(0.005);
    END LOOP;
END $$;
SQL
writer=$!
filters="('{\"env\": \"e1\"}'), ('{\"env\": [\"e2\", \"e9\"], \"svc\": \"s3\"}'), ('{\"n\": 5}'), ('{\"svc\": \"none\"}'), ('{}')"
exact_sql="SELECT count(*) FROM (VALUES ('org0'), ('org1'), ('org2'), ('org3')) o(org), (VALUES $filters) f(filter),
  (VALUES (NULL), ('01KG0000000000000000000000')) c(cur)
WHERE array(SELECT id FROM alerts_search(NULL::alerts, o.org, f.filter::jsonb, '-infinity', c.cur, 40))
   IS DISTINCT FROM array(SELECT id FROM alerts WHERE organisation_id = o.org AND alerts_attrs_match(attribute_values, f.filter::jsonb)
                          AND id < coalesce(c.cur, '8') ORDER BY id DESC LIMIT 40)"
rounds=0
for i in $(seq 1 15); do
  bad=$(sa -d src -c "$exact_sql")
  [ "$bad" = 0 ] || fail "standby: $bad pages differ from the exact filter while the primary writes (round $i)"
  stats=$(sa -d src -c "SELECT rows_without_bitmap || ' ' || stale_bitmaps FROM alerts_bloom_stats('alerts')")
  [ "$stats" = "0 0" ] || fail "standby: alerts_bloom_stats found missing/stale bitmaps: $stats"
  rounds=$i
  sleep 0.3
done
grew=$(sa -d src -c "SELECT count(*) FROM alerts WHERE attribute_values ? 'w'")
[ "$grew" -gt 0 ] || fail "standby: the primary's writes never reached the standby"
p -d src -c "INSERT INTO writer_stop VALUES (true)"
wait "$writer"
lsn=$(pa -d src -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 600); do
  [ "$(sa -d src -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break; sleep 0.1
done
pages_sql="SELECT md5(string_agg(s.id, ',' ORDER BY o.org, f.filter, c.cur NULLS FIRST, s.id DESC))
FROM (VALUES ('org0'), ('org1'), ('org2'), ('org3')) o(org), (VALUES $filters) f(filter),
  (VALUES (NULL), ('01KG0000000000000000000000')) c(cur),
  LATERAL alerts_search(NULL::alerts, o.org, f.filter::jsonb, '-infinity', c.cur, 40) s"
[ "$(pa -d src -c "$pages_sql")" = "$(sa -d src -c "$pages_sql")" ] || fail "standby: caught-up pages differ from the primary's"
echo "  standby: $rounds rounds of 40 pages exact while the primary wrote ($grew rows replayed), bitmaps current, caught-up pages equal the primary's"

# --- logical replication ------------------------------------------------------
# src: with_bitmaps (trigger form, bitmaps published), generated (generated
# form), plain (no bitmap column). dst: the same tables, all enabled.
p -d src <<'SQL'
SET client_min_messages = warning;
CREATE TABLE with_bitmaps (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL);
CREATE TABLE generated (LIKE with_bitmaps INCLUDING ALL);
CREATE TABLE plain (LIKE with_bitmaps INCLUDING ALL);
CALL alerts_enable('with_bitmaps');
CALL alerts_enable('generated', form => 'generated');
INSERT INTO with_bitmaps SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'org' || (g % 3),
    jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 11)) FROM generate_series(1, 5000) g;
INSERT INTO generated SELECT id, organisation_id, attribute_values FROM with_bitmaps;
INSERT INTO plain SELECT id, organisation_id, attribute_values FROM with_bitmaps;
CREATE PUBLICATION alerts_pub FOR TABLE with_bitmaps, generated, plain;
SELECT pg_create_logical_replication_slot('alerts_sub', 'pgoutput') \gset
SQL
createdb -p "$P" dst
p -d dst <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION alerts;
CREATE TABLE with_bitmaps (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL);
CREATE TABLE generated (LIKE with_bitmaps INCLUDING ALL);
CREATE TABLE plain (LIKE with_bitmaps INCLUDING ALL);
CALL alerts_enable('with_bitmaps');
CALL alerts_enable('generated', form => 'generated');
-- set up by hand with an ordinary trigger, which does not fire on apply
-- (alerts_enable would make it fire ALWAYS)
ALTER TABLE plain ADD COLUMN attribute_values_bitmap bit(512);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON plain FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
SQL
p -d dst -c "CREATE SUBSCRIPTION alerts_sub CONNECTION 'host=/tmp port=$P dbname=src user=postgres'
             PUBLICATION alerts_pub WITH (create_slot = false, slot_name = 'alerts_sub')" 2>&1 | grep -v "^NOTICE" || true
synced() {  # waits until dst has as many rows as src in every table
  for _ in $(seq 1 600); do
    local a b
    a=$(pa -d src -c "SELECT (SELECT count(*) FROM with_bitmaps) || ' ' || (SELECT count(*) FROM generated) || ' ' || (SELECT count(*) FROM plain) || ' ' || (SELECT md5(string_agg(attribute_values::text, ',' ORDER BY id)) FROM plain)")
    b=$(pa -d dst -c "SELECT (SELECT count(*) FROM with_bitmaps) || ' ' || (SELECT count(*) FROM generated) || ' ' || (SELECT count(*) FROM plain) || ' ' || (SELECT md5(string_agg(attribute_values::text, ',' ORDER BY id)) FROM plain)")
    [ "$a" = "$b" ] && [ "$(pa -d dst -c "SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'")" = 0 ] && return 0
    sleep 0.2
  done
  fail "subscriber: not in sync after 120 s"
}
missing() {  # DB TABLE: rows without a bitmap, and stale ones, by alerts_bloom_stats
  pa -d "$1" -c "SELECT rows_without_bitmap || ' ' || stale_bitmaps FROM alerts_bloom_stats('$2')"
}
change() {  # new rows and updated attributes on the publisher
  p -d src -c "INSERT INTO with_bitmaps SELECT alerts_ulid(), 'org1', jsonb_build_object('env', 'new', 'k', g) FROM generate_series(1, 200) g" \
           -c "INSERT INTO generated SELECT id, organisation_id, attribute_values FROM with_bitmaps WHERE attribute_values ? 'k' AND id NOT IN (SELECT id FROM generated)" \
           -c "INSERT INTO plain SELECT id, organisation_id, attribute_values FROM with_bitmaps WHERE attribute_values ? 'k' AND id NOT IN (SELECT id FROM plain)" \
           -c "UPDATE with_bitmaps SET attribute_values = attribute_values || '{\"env\": \"moved$1\"}' WHERE organisation_id = 'org2'" \
           -c "UPDATE generated SET attribute_values = attribute_values || '{\"env\": \"moved$1\"}' WHERE organisation_id = 'org2'" \
           -c "UPDATE plain SET attribute_values = attribute_values || '{\"env\": \"moved$1\"}' WHERE organisation_id = 'org2'" >/dev/null
}
synced
change 1
synced
[ "$(missing dst with_bitmaps)" = "0 0" ] || fail "subscriber: with_bitmaps (trigger form, bitmaps published) has missing or stale bitmaps: $(missing dst with_bitmaps)"
[ "$(missing dst generated)" = "0 0" ] || fail "subscriber: generated (stored generated column) has missing or stale bitmaps: $(missing dst generated)"
# plain: the publisher sends no bitmap and an ordinary trigger does not fire
# for replicated rows: alerts_bloom_stats must say so.
wrong=$(missing dst plain)
[ "${wrong%% *}" -gt 0 ] || fail "subscriber: plain should lack bitmaps (the trigger does not fire on apply), stats say: $wrong"
advice=$(pa -d dst -c "SELECT advice FROM alerts_bloom_stats('plain')")
case "$advice" in *"rows have no bitmap"*) ;; *) fail "subscriber: alerts_bloom_stats did not advise a backfill: $advice" ;; esac
case "$advice" in *"does not fire in sessions with session_replication_role = replica"*) ;;
  *) fail "subscriber: alerts_bloom_stats did not name the trigger that does not fire on apply: $advice" ;; esac
# The fix: alerts_enable makes the trigger fire for replicated rows too
# (ENABLE ALWAYS), and backfills once.
q -p "$P" -d dst -c "SET client_min_messages = warning" -c "CALL alerts_enable('plain')" >/dev/null
[ "$(pa -d dst -c "SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'plain'::regclass AND tgname = 'alerts_bloom'")" = A ] \
  || fail "subscriber: alerts_enable did not make the trigger fire ALWAYS"
change 2
synced
[ "$(missing dst plain)" = "0 0" ] || fail "subscriber: plain with ENABLE ALWAYS has missing or stale bitmaps: $(missing dst plain)"
for t in with_bitmaps generated plain; do
  echo "SELECT alerts_index_command('$t') \\gexec" | p -d dst >/dev/null
  PGPORT=$P check_table dst "$t"
done
echo "  logical: published bitmaps copied, generated column computed by the subscriber, an unpublished bitmap reported missing (an ordinary trigger) until alerts_enable makes it fire ALWAYS"
p -d dst -c "DROP SUBSCRIPTION alerts_sub" >/dev/null 2>&1 || true
stop_all
trap - EXIT
rm -rf "$root"
echo "replication: ok (streaming standby and logical subscriber)"
