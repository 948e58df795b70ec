#!/usr/bin/env bash
# pg_dump / pg_restore of a database using the extension, both forms (trigger
# and stored generated column), custom and plain formats: the restored
# bitmaps are identical, the trigger works, and nothing is done by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
src=alerts_dump_src
for db in $src alerts_dump_custom alerts_dump_plain; do dropdb --if-exists "$db" 2>/dev/null; done
createdb "$src"
q -d "$src" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION alerts;
CREATE TABLE by_trigger (id text COLLATE "C" PRIMARY KEY, organisation_id text NOT NULL, attribute_values jsonb NOT NULL);
CREATE TABLE by_generated (LIKE by_trigger INCLUDING ALL);
INSERT INTO by_trigger SELECT alerts_ulid(timestamptz '2026-01-01' + g * interval '1 minute'), 'org' || (g % 4),
    jsonb_build_object('env', 'e' || (g % 5), 'svc', 's' || (g % 13), 'n', g % 7, 'x', g % 3 = 0)
FROM generate_series(1, 20000) g;
INSERT INTO by_generated SELECT * FROM by_trigger;
CALL alerts_enable('by_trigger');
CALL alerts_enable('by_generated', form => 'generated');
CREATE INDEX by_trigger_page ON by_trigger (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
CREATE INDEX by_generated_page ON by_generated (organisation_id, id DESC) INCLUDE (attribute_values_bitmap);
SQL
fingerprint() {  # DB: one hash over both tables' ids, attributes and bitmaps
  qa -d "$1" -c "SELECT md5(string_agg(t || id || attribute_values::text || attribute_values_bitmap::text, ',' ORDER BY t, id))
                 FROM (SELECT 'trigger' t, * FROM by_trigger UNION ALL SELECT 'generated', * FROM by_generated) x"
}
before=$(fingerprint "$src")
mkdir -p target
pg_dump -Fc -d "$src" -f target/alerts_dump.custom
pg_dump -Fp -d "$src" -f target/alerts_dump.sql
createdb alerts_dump_custom
pg_restore --exit-on-error -d alerts_dump_custom target/alerts_dump.custom
createdb alerts_dump_plain
q -d alerts_dump_plain -f target/alerts_dump.sql >/dev/null
for db in alerts_dump_custom alerts_dump_plain; do
  [ "$(fingerprint "$db")" = "$before" ] || fail "$db: restored bitmaps differ from the dumped ones"
  q -d "$db" -c "INSERT INTO by_trigger VALUES (alerts_ulid(), 'org1', '{\"env\": \"restored\"}')" \
             -c "INSERT INTO by_generated VALUES (alerts_ulid(), 'org1', '{\"env\": \"restored\"}')" \
             -c "UPDATE by_trigger SET attribute_values = '{\"env\": \"e1\", \"updated\": true}' WHERE id = (SELECT min(id) FROM by_trigger)"
  check_table "$db" by_trigger
  check_table "$db" by_generated
  ver=$(qa -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'alerts'")
  echo "  $db: extension $ver restored, identical bitmaps, trigger and generated column work after restore"
done
for db in $src alerts_dump_custom alerts_dump_plain; do dropdb "$db"; done
echo "dump_restore: ok (custom and plain formats, trigger and generated forms)"
