#!/usr/bin/env bash
# One command for the whole benchmark: set up, build and install the
# extension (release), start the scratch cluster, then run the driver.
#   bash benches/run.sh --size smoke|full|xl [--seconds S] [--pg 15|16|18]
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --pg ]; then export ALERTS_PG=$2; shift 2; else args+=("$1"); shift; fi
done
export ALERTS_PGS=${ALERTS_PG:-15}
bash scripts/setup.sh
source scripts/pg.sh
bash scripts/install.sh
bash scripts/cluster.sh start
python3 benches/run.py "${args[@]}"
