#!/usr/bin/env bash
# The pg_regress suites of tests/schedule against the cluster of
# scripts/cluster.sh (ALERTS_PG), with no Rust tool on PATH: the installed
# extension is all they use.
#
# The suites after `query` need only what the first four (up to and
# including `query`) make, so they run in two databases at once, each after
# its own run of those four: the suites of LANE1 in one, every other suite
# of the schedule in the other (225-245 s a version in CI on 2 cores, against
# about 560 s in one database). A
# suite added to tests/schedule runs in the second lane with no change here.
# ALERTS_REGRESS_SERIAL=1 runs the whole schedule in one database, in order.
#   regress.sh OUTDIR [SCHEDULE]   (SCHEDULE: default tests/schedule)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
out=${1:?usage: regress.sh OUTDIR [SCHEDULE]}
schedule=${2:-tests/schedule}
LANE1=(search partitioned partitioned_changes repeated_ids)

regress() {  # regress DB OUTDIR SCHEDULE...
  local db=$1 dir=$2; shift 2
  mkdir -p "$dir"
  env -i PATH="$PG_BINDIR:/usr/bin:/bin" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" LANG=C.UTF-8 \
    "$PG_REGRESS" --bindir="$PG_BINDIR" --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" \
    --dbname="$db" --inputdir=tests --outputdir="$dir" "${@/#/--schedule=}"
}
diffs() { [ -s "$1/regression.diffs" ] && head -200 "$1/regression.diffs"; return 0; }

rm -rf "$out"; mkdir -p "$out"
if [ "${ALERTS_REGRESS_SERIAL:-0}" = 1 ]; then
  regress alerts_regress "$out" "$schedule" || { diffs "$out"; exit 1; }
  exit 0
fi

mapfile -t tests < <(sed -n 's/^test: *//p' "$schedule" | tr ' ' '\n' | sed '/^$/d')
base=(); lane1=(); lane2=(); in_base=1
for t in "${tests[@]}"; do
  if [ "$in_base" = 1 ]; then base+=("$t"); [ "$t" = query ] && in_base=0; continue; fi
  if [[ " ${LANE1[*]} " == *" $t "* ]]; then lane1+=("$t"); else lane2+=("$t"); fi
done
[ "$in_base" = 0 ] || { echo "regress: $schedule has no \`query\` suite to split after" >&2; exit 1; }
for t in "${LANE1[@]}"; do
  [[ " ${lane1[*]} " == *" $t "* ]] || { echo "regress: LANE1's $t is not after query in $schedule" >&2; exit 1; }
done
printf 'test: %s\n' "${base[@]}" > "$out/base.schedule"
printf 'test: %s\n' "${lane1[@]}" > "$out/lane1.schedule"
printf 'test: %s\n' "${lane2[@]}" > "$out/lane2.schedule"

pids=()
for l in 1 2; do
  regress "alerts_regress_$l" "$out/lane$l" "$out/base.schedule" "$out/lane$l.schedule" > "$out/lane$l.log" 2>&1 &
  pids+=($!)
done
status=0
for l in 1 2; do
  ok=1; wait "${pids[$((l - 1))]}" || ok=0
  echo "--- lane $l (database alerts_regress_$l): ${base[*]}, then $(sed -n 's/^test: //p' "$out/lane$l.schedule" | xargs)"
  cat "$out/lane$l.log"
  [ "$ok" = 1 ] || { status=1; diffs "$out/lane$l"; }
done
exit "$status"
