#!/usr/bin/env bash
# Sets everything up and runs every test: formatting and lints, the pure
# core's unit and property tests, then the extension installed into a scratch
# PostgreSQL 15 cluster and exercised through SQL with pg_regress.
# Idempotent; run as root on Debian 12. ALERTS_SKIP_LINT=1 skips fmt/clippy.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PGXS=$(dirname "$($PG_CONFIG --pgxs)")
export PGHOST=/tmp PGPORT=${ALERTS_PGPORT:-5499} PGUSER=postgres

bash scripts/setup.sh
passed=0; failed=0
step() {  # step NAME COMMAND...: runs a step, counts it, keeps going
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "--- ok: $name"
  else failed=$((failed + 1)); echo "--- FAILED: $name"; fi
}

if [ "${ALERTS_SKIP_LINT:-0}" != 1 ]; then
  step "cargo fmt --check" cargo fmt --all -- --check
  step "cargo fmt --check (fuzz targets)" cargo fmt --manifest-path fuzz/Cargo.toml -- --check
  step "cargo clippy -D warnings" cargo clippy --workspace --all-targets -- -D warnings
fi
step "core unit and property tests (cargo test)" cargo test -p alerts-core
step "install the extension" bash scripts/install.sh
bash scripts/cluster.sh start
mkdir -p target/regress
step "SQL regression tests (pg_regress)" "$PGXS/../test/regress/pg_regress" \
  --host=/tmp --port="$PGPORT" --user=postgres --dbname=alerts_regress \
  --inputdir=tests --outputdir=target/regress --schedule=tests/schedule
if [ -s target/regress/regression.diffs ]; then head -200 target/regress/regression.diffs; fi
step "upgrade 0.1.0 -> current, then the suite on the upgraded database" bash tests/shell/upgrade.sh
# Reliability (tests/shell): ALERTS_LONG=1 runs the long variants (a 10-minute
# soak, 100,000 hostile inputs) documented in the README.
if [ "${ALERTS_LONG:-0}" = 1 ]; then
  export ALERTS_SOAK_SECONDS=${ALERTS_SOAK_SECONDS:-600} ALERTS_HOSTILE_CASES=${ALERTS_HOSTILE_CASES:-100000}
  export ALERTS_FUZZ_RUNS=${ALERTS_FUZZ_RUNS:-20000000}
fi
step "cargo fuzz: encoder, filter compiler, ULIDs (${ALERTS_FUZZ_RUNS:-1000000} runs each)" bash tests/shell/fuzz.sh
step "dump and restore (pg_dump/pg_restore, both forms)" bash tests/shell/dump_restore.sh
step "hostile and malformed inputs" python3 tests/shell/hostile_inputs.py
step "concurrency soak (${ALERTS_SOAK_SECONDS:-60} s, 8 clients + COPY)" bash tests/shell/soak.sh
step "crash safety (kill -9, immediate stop)" bash tests/shell/crash.sh

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
