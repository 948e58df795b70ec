#!/usr/bin/env bash
# One command for the whole benchmark: set up, build and install the
# extension (release), start the scratch cluster, then run the driver.
#   bash benches/run.sh --size smoke|full|xl [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
export PGHOST=/tmp PGPORT=${ALERTS_PGPORT:-5499} PGUSER=postgres
bash scripts/setup.sh
bash scripts/install.sh
bash scripts/cluster.sh start
python3 benches/run.py "$@"
