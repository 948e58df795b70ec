#!/usr/bin/env bash
# Crash safety: (1) kill -9 a backend in the middle of a bulk insert, (2) stop
# the cluster with `pg_ctl stop -m immediate` under load. After recovery every
# committed row is present with a correct bitmap, no row of the interrupted
# transactions is, indexes agree with the heap and searches are exact.
# Everything the extension keeps is in ordinary WAL-logged tables and indexes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
db=alerts_crash
mkdir -p target/crash
dropdb --if-exists "$db" 2>/dev/null; createdb "$db"
# The scratch cluster runs with synchronous_commit = off for the benchmark;
# a commit this test counts on must be durable when the client hears of it.
q -d "$db" -c "ALTER DATABASE $db SET synchronous_commit = on"
q -d "$db" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION alerts;
CREATE TABLE crash (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL,
                    attribute_values_bitmap bit(512), source text NOT NULL);
CREATE TRIGGER alerts_bloom BEFORE INSERT OR UPDATE ON crash FOR EACH ROW EXECUTE FUNCTION alerts_bloom_trigger();
CREATE INDEX crash_page ON crash (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX crash_gin ON crash USING gin (attribute_values jsonb_path_ops);
CREATE INDEX crash_keys ON crash USING gin (alerts_keys(organisation_id, id, attribute_values));
INSERT INTO crash (id, organisation_id, attribute_values, source)
SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 second'), 'org' || (g % 3),
       jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 13), 'n', g % 7), 'seed'
FROM generate_series(1, 50000) g;
SQL

# A writer committing one row per statement; it prints each id only after
# its INSERT returned, i.e. after the commit.
start_writer() {  # LOG
  ( for i in $(seq 1 100000); do
      echo "INSERT INTO crash (id, organisation_id, attribute_values, source) VALUES (alerts_ulid(), 'org$((i % 3))', '{\"env\": \"e$((i % 5))\", \"w\": $i}', 'writer') RETURNING id;"
    done ) | psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" > "$1" 2>/dev/null &
  echo $!
}
bulk() {  # one big transaction that never commits before the crash
  psql -X -q -d "$db" -c "INSERT INTO crash (id, organisation_id, attribute_values, source)
    SELECT alerts_ulid(), 'org' || (g % 3), jsonb_build_object('env', 'e' || (g % 5), 'bulk', g), 'bulk'
    FROM generate_series(1, 5000000) g" >/dev/null 2>&1 &
  echo $!
}
verify() {  # LOG: committed ids present, uncommitted absent, everything exact
  local log=$1 committed missing bulk_rows
  committed=$(grep -c . "$log" || true)
  [ "$committed" -gt 0 ] || fail "the writer committed nothing before the crash"
  q -d "$db" -c "CREATE TEMP TABLE seen (id text COLLATE \"C\")" -c "\copy seen FROM '$log'" \
    -c "CREATE TABLE IF NOT EXISTS missing_after_crash AS SELECT id FROM seen EXCEPT SELECT id FROM crash"
  missing=$(qa -d "$db" -c "SELECT count(*) FROM missing_after_crash")
  qa -d "$db" -c "DROP TABLE missing_after_crash" >/dev/null
  [ "$missing" = 0 ] || fail "$missing committed rows are missing after recovery"
  bulk_rows=$(qa -d "$db" -c "SELECT count(*) FROM crash WHERE source = 'bulk'")
  [ "$bulk_rows" = 0 ] || fail "$bulk_rows rows of the uncommitted bulk insert are visible"
  echo "  $committed rows committed by the writer before the crash: all present; the uncommitted bulk insert left no row"
  check_table "$db" crash
}
wait_bulk_started() {
  for _ in $(seq 1 100); do
    pid=$(qa -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'INSERT INTO crash (id, organisation_id, attribute_values, source)%SELECT%' AND state = 'active' AND pid <> pg_backend_pid()" || true)
    [ -n "$pid" ] && { echo "$pid"; return; }
    sleep 0.1
  done
  fail "the bulk insert did not start"
}

echo "crash 1: kill -9 the backend of a bulk insert"
writer=$(start_writer target/crash/writer1.log)
bulk >/dev/null
bpid=$(wait_bulk_started)
sleep 3
kill -9 "$bpid"
wait "$writer" 2>/dev/null || true
# The postmaster reacts to the killed backend by resetting every backend and
# recovering; a connection made before it noticed would still succeed.
# Wait (up to 10 s) to see it stop accepting connections, then for recovery.
for _ in $(seq 1 100); do "$PG_BINDIR/pg_isready" -q || break; sleep 0.1; done
wait_ready
verify target/crash/writer1.log

echo "crash 2: pg_ctl stop -m immediate under load"
writer=$(start_writer target/crash/writer2.log)
bulk >/dev/null
wait_bulk_started >/dev/null
sleep 3
as_pg "$PG_BINDIR/pg_ctl" -D "${ALERTS_PGDATA:-/tmp/alerts-pg-$PGPORT}" stop -m immediate >/dev/null
wait "$writer" 2>/dev/null || true
bash scripts/cluster.sh start >/dev/null
wait_ready
verify target/crash/writer2.log
dropdb "$db"
echo "crash: ok (backend killed, cluster stopped immediately; recovery kept every committed row and no uncommitted one)"
