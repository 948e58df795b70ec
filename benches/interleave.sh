#!/usr/bin/env bash
# Two (or more) statements through the client protocol, interleaved call
# by call: one `pgbench -M prepared` run whose every transaction picks one
# of the scripts at random, so that every slow stretch of the machine
# falls on all of them alike. Prints each statement's p50, p95 and mean
# latency in µs over its calls (from pgbench's log, whose fourth field is
# the script's number). For gaps of a few microseconds, where rounds of
# whole runs (`run.py`, `alternate.sh`) still disagree from run to run.
#
#   bash benches/interleave.sh [-s SECONDS] DB A.sql B.sql...
#
# Each FILE holds one SELECT (a method's query as benches/run.py writes
# it). Runs on the server PGHOST/PGPORT/PGUSER name, with the custom scan
# off (as run.py times `alerts_search` and the peers); set PGOPTIONS to
# time plain SQL through it instead.
set -euo pipefail
seconds=20
while getopts s: opt; do
  case $opt in s) seconds=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || { echo "usage: $0 [-s SECONDS] DB A.sql B.sql..." >&2; exit 2; }
db=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts=()
for f in "$@"; do scripts+=(-f "$f"); done
PGOPTIONS="${PGOPTIONS:--c alerts.custom_scan=off}" pgbench -n -M prepared -c 1 -T "$seconds" \
  -l --log-prefix="$work/log" "${scripts[@]}" "$db" > /dev/null
# each line of pgbench's log: client, transaction, latency in µs, script, ...
cat "$work"/log.* | python3 -c '
import statistics, sys
names = sys.argv[1:]
by = {}
for line in sys.stdin:
    f = line.split()
    by.setdefault(int(f[3]), []).append(float(f[2]))
for i, name in enumerate(names):
    v = sorted(by.get(i, [0.0]))
    print(f"{name:40s} p50 {v[len(v) // 2]:8.1f} µs  p95 {v[int(len(v) * 0.95)]:8.1f} µs  "
          f"mean {statistics.fmean(v):8.1f} µs  ({len(v)} calls)")
' $(for f in "$@"; do basename "$f" .sql; done)
