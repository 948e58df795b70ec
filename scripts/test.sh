#!/usr/bin/env bash
# Sets everything up and runs every test: formatting and lints, the pure
# core's unit and property tests and fuzz targets, the release packages
# (scripts/package.sh), then for each PostgreSQL version (15 to 19) the
# extension installed from its package with no Rust on PATH into that
# version's scratch cluster and exercised through SQL: pg_regress, the
# isolation tests, the upgrade paths, dump/restore, and the package removed
# cleanly; on the host's 15, 16 and 18 also hostile inputs, the random
# differential, real clients, replicas, crash safety (and, on 15, the
# concurrency soak, DDL under load and a Citus cluster). 17 and 19 run in
# their Debian roots (scripts/root.sh, tests/shell/in_root.sh).
# Idempotent; run as root on Debian 12. Ends with one `tests: N passed, M
# failed` line.
#   ALERTS_PGS="18"     only these versions (default "15 16 17 18 19")
#   ALERTS_QUICK=1      day-to-day: no lints, no fuzzing, no soak, no DDL load, no Citus
#   ALERTS_CITUS=1      with ALERTS_QUICK=1: the Citus tests all the same
#   ALERTS_SKIP_LINT=1  no fmt/clippy
#   ALERTS_LONG=1       the long variants (10-minute soak, 100,000 hostile inputs,
#                       20,000 differential queries)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${ALERTS_PGS:-15 16 17 18 19}
# the versions on this host's own servers (17 and 19 run in Debian roots)
QUICK=${ALERTS_QUICK:-0}

ALERTS_PGS="$VERSIONS" bash scripts/setup.sh
passed=0; failed=0
# Each step's output also goes to target/steps/NN.log; a failed step's name
# and the tail of its log are repeated in target/test-failures.txt and at the
# end of the run, where a truncated CI log still shows them.
mkdir -p target/steps; rm -f target/steps/*.log target/test-failures.txt
step() {  # step NAME COMMAND...: runs a step, counts it, keeps going
  local name=$1; shift
  local log; log=target/steps/$(printf %02d $((passed + failed + 1))).log
  local t=$SECONDS
  echo "=== $name"
  if "$@" 2>&1 | tee "$log"; then passed=$((passed + 1)); echo "--- ok: $name ($((SECONDS - t)) s)"
  else
    failed=$((failed + 1)); echo "--- FAILED: $name ($((SECONDS - t)) s)"
    { echo "--- FAILED: $name (last 40 lines of its output)"; tail -40 "$log"; } >> target/test-failures.txt
  fi
}
started=$SECONDS

if [ "${ALERTS_SKIP_LINT:-0}" != 1 ] && [ "$QUICK" != 1 ]; then
  step "cargo fmt --check" cargo fmt --all -- --check
  step "cargo fmt --check (fuzz targets)" cargo fmt --manifest-path fuzz/Cargo.toml -- --check
  step "cargo clippy -D warnings" cargo clippy --ignore-rust-version --workspace --all-targets -- -D warnings
fi
step "core unit and property tests (cargo test)" cargo test --ignore-rust-version -p alerts-core
step "docs: every relative link resolves, README under 500 lines" python3 tests/shell/links.py
# Reliability (tests/shell): ALERTS_LONG=1 runs the long variants (a 10-minute
# soak, 100,000 hostile inputs) documented in the README.
if [ "${ALERTS_LONG:-0}" = 1 ]; then
  export ALERTS_SOAK_SECONDS=${ALERTS_SOAK_SECONDS:-600} ALERTS_HOSTILE_CASES=${ALERTS_HOSTILE_CASES:-100000}
  export ALERTS_FUZZ_RUNS=${ALERTS_FUZZ_RUNS:-20000000} ALERTS_DIFF_QUERIES=${ALERTS_DIFF_QUERIES:-20000}
fi
if [ "$QUICK" != 1 ]; then
  step "cargo fuzz: encoder, filter compiler, ULIDs (${ALERTS_FUZZ_RUNS:-1000000} runs each)" bash tests/shell/fuzz.sh
fi

# The client encoders (clients/): installed as a user installs them, then
# their own tests (the golden vectors of tests/vectors/v1.jsonl, parsed and
# text forms, refusals; the TypeScript build loaded with require and import).
step "Python client: pip install ./clients/python, unittest" \
  bash -c 'target/pyenv/bin/pip install -q --disable-pip-version-check ./clients/python && target/pyenv/bin/python -m unittest discover -s clients/python/tests'
step "TypeScript client: npm ci, build, node --test" bash -c 'cd clients/typescript && npm ci --no-audit --no-fund --silent && npm test --silent'
step "Go client: go vet, go test (golden vectors)" bash -c 'cd clients/go && go vet ./... && go test ./...'
step "Java client: mvn test (golden vectors)" bash -c 'cd clients/java && mvn -q -B -Dstyle.color=never test && echo'

# The release artifacts (scripts/package.sh) for these versions; each
# version's suites below run on the extension installed from them, as a
# host without Rust installs it (tests/shell/package.sh).
packaged=0
step "release artifacts for PostgreSQL $VERSIONS (scripts/package.sh; 17, 19 and 18's .deb in their roots)" \
  env ALERTS_PGS="$VERSIONS" bash scripts/package.sh && [ -s target/dist/SHA256SUMS ] && packaged=1

# The SQL suites, once per version, each against its own cluster.
base_path=$PATH; base_ld=${LD_LIBRARY_PATH:-}
for v in $VERSIONS; do
  export PATH=$base_path LD_LIBRARY_PATH=$base_ld ALERTS_PG=$v
  # 17 and 19, from Debian roots: built and installed inside, then
  # pg_regress and the isolation specs (tests/shell/in_root.sh)
  if [ "$v" = 17 ] || [ "$v" = 19 ]; then
    t0=$SECONDS
    step "[pg$v] in its Debian root: dpkg -i, pg_regress, isolation, upgrades, dump/restore, dpkg -r" \
      env ALERTS_PACKAGED=$packaged bash scripts/root.sh "$v" run bash tests/shell/in_root.sh
    echo "=== PostgreSQL $v: $((SECONDS - t0)) s"
    continue
  fi
  source scripts/pg.sh
  pg_require
  t0=$SECONDS
  step "[pg$v] install the release package with no Rust on PATH (dpkg -i or install.sh)" bash tests/shell/package.sh install
  bash scripts/cluster.sh start
  # with no Rust tool on PATH: the installed package is all it uses (two
  # databases at once; tests/shell/regress.sh)
  step "[pg$v] SQL regression tests (pg_regress, no Rust on PATH)" \
    bash tests/shell/regress.sh "target/regress-pg$v"
  # two and three sessions in a set order (tests/isolation): SERIALIZABLE
  # conflicts, REPEATABLE READ, cursors
  mkdir -p "target/isolation-pg$v"
  step "[pg$v] isolation tests (pg_isolation_regress: SERIALIZABLE, snapshots, cursors)" \
    env -i PATH="$PG_BINDIR:/usr/bin:/bin" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" LANG=C.UTF-8 \
    "$PG_ISOLATION_REGRESS" --bindir="$PG_BINDIR" \
    --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname=alerts_isolation \
    --inputdir=tests/isolation --outputdir="target/isolation-pg$v" --schedule=tests/isolation/schedule
  if [ -s "target/isolation-pg$v/regression.diffs" ]; then head -200 "target/isolation-pg$v/regression.diffs"; fi
  # the suite on an upgraded database once per run (first version): the
  # object-by-object comparison with a fresh install runs on every version
  first=${VERSIONS%% *}
  if [ "$v" = "$first" ]; then
    step "[pg$v] upgrade 0.1.0 and 0.2.0 -> current, then the core suites on the upgraded database" bash tests/shell/upgrade.sh
  else
    step "[pg$v] upgrade 0.1.0 and 0.2.0 -> current (objects equal a fresh install's)" \
      env ALERTS_UPGRADE_SUITE=0 ALERTS_UPGRADE_SUITE_PG="$first" bash tests/shell/upgrade.sh
  fi
  step "[pg$v] real clients: psycopg 3 (prepare_threshold=0) and SQLAlchemy 2 ORM, plain SQL through the node" \
    target/pyenv/bin/python tests/clients/real_clients.py
  step "[pg$v] dump and restore (pg_dump/pg_restore, both forms)" bash tests/shell/dump_restore.sh
  step "[pg$v] hostile and malformed inputs" python3 tests/shell/hostile_inputs.py
  step "[pg$v] random differential: ${ALERTS_DIFF_QUERIES:-1500} queries on every layout against Postgres' own plan" \
    target/pyenv/bin/python tests/shell/differential.py
  # The soak is about the extension under concurrent writers, not about a
  # version: it runs on 15, the version the benchmarks run on.
  if [ "$QUICK" != 1 ] && [ "$v" = 15 ]; then
    step "[pg$v] concurrency soak (${ALERTS_SOAK_SECONDS:-60} s, 8 clients + COPY)" bash tests/shell/soak.sh
  fi
  # DDL under load: the two-session case on every version, the load for
  # 45 s on 15 and 15 s on the others.
  if [ "$QUICK" != 1 ]; then
    ddl_secs=${ALERTS_DDL_SECONDS:-$([ "$v" = 15 ] && echo 45 || echo 15)}
    step "[pg$v] DDL under load ($ddl_secs s: swaps, ALTER TABLE, indexes rebuilt, partitions)" \
      env ALERTS_DDL_SECONDS="$ddl_secs" ALERTS_SERVER_LOG="${ALERTS_PGDATA:-/tmp/alerts-pg-$PGPORT}/server.log" \
      target/pyenv/bin/python tests/shell/ddl_load.py
  fi
  # The search as portable SQL, on a database without the extension: it
  # is meant for any server, so on every version.
  step "[pg$v] alerts_portable.search without the extension: rows of 3 clients, plain and by id" \
    target/pyenv/bin/python tests/shell/portable_search.py
  # The client encoders against this server, and the portable form on a
  # database without the extension (both about the format, not a version).
  if [ "$v" = 15 ]; then
    step "[pg$v] client encoders = server: ${ALERTS_CLIENT_CASES:-100000} inputs x 3 widths, Python, TypeScript, Go and Java" \
      target/pyenv/bin/python tests/shell/clients_diff.py
    step "[pg$v] portable query without the extension; alerts_enable adopts the client's bitmaps" \
      target/pyenv/bin/python tests/shell/portable.py
    # Debian packages pg_partman for 15 here (scripts/setup.sh)
    step "[pg$v] pg_partman daily leaves: run_maintenance makes and drops leaves under both search paths" \
      bash tests/shell/partman.sh
  fi
  # Citus 13.2 builds for 15 here (scripts/citus.sh; the build is cached).
  if [ "$v" = 15 ] && { [ "$QUICK" != 1 ] || [ "${ALERTS_CITUS:-0}" = 1 ]; }; then
    step "[pg$v] Citus: coordinator + 2 workers, distributed table (search, enable, COPY, joins)" bash tests/shell/citus.sh
    bash scripts/citus.sh stop || true
  fi
  step "[pg$v] replicas: streaming standby and logical subscriber" bash tests/shell/replication.sh
  step "[pg$v] crash safety (kill -9, immediate stop)" bash tests/shell/crash.sh
  if [ "$v" -ge 18 ]; then
    step "[pg$v] the extension outside the server's directories (extension_control_path, dynamic_library_path), pg_regress" \
      bash tests/shell/control_path.sh
  fi
  step "[pg$v] remove the package (nothing left); install.sh refuses bad input" bash tests/shell/package.sh remove
  # a cluster that will not stop (after a failed step) must not end the run
  bash scripts/cluster.sh stop || echo "--- note: the PostgreSQL $v cluster did not stop cleanly"
  # 18's .deb, for Debian's own postgresql-18, in the sid root (the suites
  # above ran on the host's relocatable 18 from its tarball)
  if [ "$v" = 18 ]; then
    step "[pg18] its .deb in the Debian sid root: dpkg -i, base suites, isolation, dpkg -r" \
      env ALERTS_PACKAGED=$packaged ALERTS_ROOT_SUITES=package bash scripts/root.sh 18 run bash tests/shell/in_root.sh
  fi
  echo "=== PostgreSQL $v: $((SECONDS - t0)) s"
done

echo
echo "tests: PostgreSQL $VERSIONS in $((SECONDS - started)) s"
[ -s target/test-failures.txt ] && cat target/test-failures.txt
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
