#!/usr/bin/env bash
# Concurrency soak: 8 clients for ALERTS_SOAK_SECONDS (default 60; the README
# documents a 10-minute run) mixing inserts, updates of attribute_values,
# deletes and alerts_search pages checked against the exact filter in the
# same snapshot, while a ninth client loads batches with COPY. Passes when no
# transaction failed, every row's bitmap equals alerts_bloom(attributes), the
# btree indexes agree with the heap (amcheck), and searches are exact.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
secs=${ALERTS_SOAK_SECONDS:-60}
db=alerts_soak
dir=tests/shell/soak
out=target/soak; rm -rf "$out"; mkdir -p "$out"
dropdb --if-exists "$db" 2>/dev/null; createdb "$db"
q -d "$db" -f "$dir/setup.sql" >/dev/null

q -d "$db" -c "ALTER TABLE soak ALTER COLUMN id SET DEFAULT alerts_ulid()"
# The COPY client: a batch of 500 rows per COPY, until the soak ends.
python3 - > "$out/copy.tsv" <<'PY'
import json
for i in range(500):
    attrs = {"env": "e%d" % (i % 5), "svc": "s%d" % (i % 50), "src": "copy", "i": i}
    print("org%d\t%s" % (i % 10, json.dumps(attrs)))
PY
( end=$((SECONDS + secs)); n=0
  while [ $SECONDS -lt $end ]; do
    q -d "$db" -c "\copy soak (organisation_id, attribute_values) FROM '$out/copy.tsv'" -c "SELECT 1" >/dev/null || exit 1
    n=$((n + 1))
  done; echo "$n" > "$out/copies" ) &
copier=$!

"$PG_BINDIR/pgbench" -n -c 8 -j 2 -T "$secs" "$db" \
  -f "$dir/insert.sql@5" -f "$dir/update.sql@2" -f "$dir/delete.sql@1" -f "$dir/search.sql@3" \
  > "$out/pgbench.txt" 2>&1 || { cat "$out/pgbench.txt"; fail "pgbench reported errors"; }
wait "$copier" || fail "the COPY client failed"
grep -E "number of (transactions actually processed|failed transactions)|tps =" "$out/pgbench.txt" | sed 's/^/  /'
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out/pgbench.txt")
[ "${failed:-0}" = 0 ] || fail "$failed transactions failed"
grep -q "aborted" "$out/pgbench.txt" && fail "a pgbench client aborted: $(grep -m1 aborted "$out/pgbench.txt")"
echo "  COPY batches of 500 rows: $(cat "$out/copies")"
check_table "$db" soak
dropdb "$db"
echo "soak: ok ($secs s, 8 clients + 1 COPY client, no failed transaction)"
