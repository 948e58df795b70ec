#!/usr/bin/env bash
# Sets everything up and runs the demo: a scratch cluster with sample alerts,
# the filtered history query of the README with its plan and timing, and the
# same page fetched through a GIN index for comparison. Idempotent; root on
# Debian 12. ALERTS_DEMO_ROWS sets the sample size (default 300000).
set -euo pipefail
cd "$(dirname "$0")/.."
export PGHOST=/tmp PGPORT=${ALERTS_PGPORT:-5499} PGUSER=postgres
ROWS=${ALERTS_DEMO_ROWS:-300000}

bash scripts/setup.sh
bash scripts/install.sh
bash scripts/cluster.sh start
psql -q -d postgres -c "DROP DATABASE IF EXISTS alerts_demo" -c "CREATE DATABASE alerts_demo"
echo "demo: generating $ROWS sample alerts"
psql -q -X -v ON_ERROR_STOP=1 -d alerts_demo -f benches/sql/schema.sql
psql -q -X -v ON_ERROR_STOP=1 -d alerts_demo -v large=$((ROWS / 2)) -v medium=$((ROWS / 10)) -v small=$((ROWS / 50)) \
  -v total="$ROWS" -v anchor="$(date -u +%Y-%m-%dT00:00:00Z)" -f benches/sql/generate.sql
psql -X -v ON_ERROR_STOP=1 -d alerts_demo -f scripts/demo.sql
