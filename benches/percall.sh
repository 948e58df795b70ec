#!/usr/bin/env bash
# Per-call cost of statements without the client round trip: each statement
# runs N times in a server-side plpgsql loop (one transaction, after 200
# warm-up calls) and the mean is printed in µs. With two builds of the
# library (A and B), they take turns: the installed alerts.so is replaced
# before each round (a new session loads the file anew; the server keeps
# running) and the last one named is left installed. Differences of a
# microsecond that pgbench's latency hides in its noise show here.
#
#   bash benches/percall.sh [-a A.so -b B.so] [-r ROUNDS] [-n CALLS] DB FILE.sql...
#
# Each FILE holds one SELECT (a method's query as benches/run.py writes it).
# Runs on the server PGHOST/PGPORT name, whose pg_config is first on PATH;
# replacing the library needs write access to the server's pkglibdir.
set -euo pipefail
rounds=3 calls=20000 a= b=
while getopts a:b:r:n: opt; do
  case $opt in a) a=$OPTARG ;; b) b=$OPTARG ;; r) rounds=$OPTARG ;; n) calls=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
db=$1; shift
lib=$(pg_config --pkglibdir)/alerts.so
builds=(installed)
[ -n "$a" ] && [ -n "$b" ] && builds=("$a" "$b")
for r in $(seq "$rounds"); do
  for so in "${builds[@]}"; do
    if [ "$so" != installed ]; then install -m 0755 "$so" "$lib.percall" && mv -f "$lib.percall" "$lib"; fi
    for f in "$@"; do
      q=$(sed 's/;[[:space:]]*$//' "$f")
      us=$(PGOPTIONS="-c alerts.custom_scan=off" psql -X -At -v ON_ERROR_STOP=1 -d "$db" 2>&1 <<SQL | sed -n 's/.*percall \([0-9.]*\).*/\1/p'
DO \$\$ DECLARE t0 timestamptz; BEGIN
  FOR i IN 1..200 LOOP PERFORM * FROM ($q) s; END LOOP;
  t0 := clock_timestamp();
  FOR i IN 1..$calls LOOP PERFORM * FROM ($q) s; END LOOP;
  RAISE NOTICE 'percall %', extract(epoch FROM clock_timestamp() - t0) * 1e6 / $calls;
END \$\$;
SQL
)
      echo "$(basename "$so") $(basename "$f" .sql) ${us:-nan}"
    done
  done
done | awk '{k = $2 "  " $1; s[k] += $3; n[k]++; v[k] = v[k] " " sprintf("%.1f", $3)}
  END {for (k in s) printf "%-60s %8.2f µs  (rounds:%s)\n", k, s[k] / n[k], v[k]}' | sort
