#!/usr/bin/env bash
# Sets everything up and runs the demo: a scratch cluster with sample alerts
# (readable tenants, attributes and values), the filtered history query of the
# README with its plan and timing, alerts_search, and the same pages through
# a GIN index for comparison. Idempotent; root on Debian 12.
# ALERTS_DEMO_ROWS sets the sample size (default 300000); ALERTS_PG the
# PostgreSQL version (15, 16 or 18; default 15).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ALERTS_DEMO_ROWS:-300000}
export ALERTS_PG=${ALERTS_PG:-15}

ALERTS_PGS=$ALERTS_PG bash scripts/setup.sh
source scripts/pg.sh
bash scripts/install.sh
bash scripts/cluster.sh start
psql -q -d postgres -c "DROP DATABASE IF EXISTS alerts_demo" -c "CREATE DATABASE alerts_demo"
echo "demo: generating $ROWS sample alerts"
psql -q -X -v ON_ERROR_STOP=1 -d alerts_demo -f benches/sql/schema.sql
psql -q -X -v ON_ERROR_STOP=1 -d alerts_demo -v readable=1 -v large=$((ROWS / 2)) -v medium=$((ROWS / 10)) \
  -v small=$((ROWS / 50)) -v total="$ROWS" -v anchor="$(date -u +%Y-%m-%dT00:00:00Z)" -f benches/sql/generate.sql
psql -X -v ON_ERROR_STOP=1 -d alerts_demo -f scripts/demo.sql
