#!/usr/bin/env bash
# Two statements through the client protocol, taking turns: 1-second
# `pgbench -M prepared` runs of A, then B, ROUNDS times (a new connection
# each run), and for each statement the median over its runs of the run's
# p50 and mean latency, in µs. A slow stretch of the machine falls on a
# run or two of each, not on one statement's whole measurement: for gaps
# of a few microseconds between two pages with rows, where `run.py`'s
# rounds disagree from run to run and `percall.sh` (no client) cannot
# see what the protocol costs.
#
#   bash benches/alternate.sh [-r ROUNDS] [-s SECONDS] DB A.sql B.sql
#
# Each FILE holds one SELECT (a method's query as benches/run.py writes
# it). Runs on the server PGHOST/PGPORT/PGUSER name, with the custom scan
# off (as run.py times `alerts_search` and the peers); set PGOPTIONS to
# time plain SQL through it instead.
set -euo pipefail
rounds=12 seconds=1
while getopts r:s: opt; do
  case $opt in r) rounds=$OPTARG ;; s) seconds=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 3 ] || { echo "usage: $0 [-r ROUNDS] [-s SECONDS] DB A.sql B.sql" >&2; exit 2; }
db=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  for f in "$@"; do
    rm -f "$work"/log.*
    PGOPTIONS="${PGOPTIONS:--c alerts.custom_scan=off}" pgbench -n -M prepared -c 1 -T "$seconds" \
      -l --log-prefix="$work/log" -f "$f" "$db" > /dev/null
    # each line of pgbench's log: client, transaction, latency in µs, ...
    sort -n -k3,3 "$work"/log.* | awk -v f="$(basename "$f" .sql)" \
      '{v[NR] = $3; s += $3} END {print f, v[int((NR + 1) / 2)], s / NR}'
  done
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    f, p50, mean = line.split()
    runs.setdefault(f, []).append((float(p50), float(mean)))
for f, v in sorted(runs.items()):
    print(f"{f:40s} p50 {statistics.median(x[0] for x in v):8.1f} µs  "
          f"mean {statistics.median(x[1] for x in v):8.1f} µs  ({len(v)} runs)")
'
