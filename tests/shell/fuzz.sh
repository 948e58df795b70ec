#!/usr/bin/env bash
# cargo fuzz targets of the pure core (fuzz/): the encoder and bloom, the
# filter compiler against documents, ULIDs. ALERTS_FUZZ_RUNS executions each
# (default 1,000,000; the README documents 20,000,000), from the committed
# seeds. Stable Rust: libFuzzer's coverage instrumentation without a
# sanitizer (-s none); the targets' own assertions and Rust's overflow checks
# (debug assertions are on) catch the bugs.
set -euo pipefail
cd "$(dirname "$0")/../../fuzz"
runs=${ALERTS_FUZZ_RUNS:-1000000}
# the fuzz build's own flags: a target dir apart from the workspace's
[ -n "${ALERTS_BUILD_CACHE:-}" ] && export CARGO_TARGET_DIR=$ALERTS_BUILD_CACHE/fuzz-target
if ! cargo fuzz --version 2>/dev/null | grep -q "0.13.2"; then
  echo "fuzz: installing cargo-fuzz 0.13.2 (about 2 minutes)"
  cargo install cargo-fuzz --version 0.13.2 --locked
fi
for t in encode filter ulid; do
  corpus=../target/fuzz-corpus/$t
  mkdir -p "$corpus"
  cp seeds/$t/* "$corpus/"
  out=$(cargo fuzz run -s none "$t" "$corpus" -- -runs="$runs" -dict=json.dict -max_len=4096 2>&1) || {
    echo "$out" | grep -v "NEW\\|REDUCE\\|pulse" | tail -40
    echo "FAIL: fuzz target $t (the input is saved under fuzz/artifacts/$t)"
    exit 1
  }
  echo "  $t: $(echo "$out" | grep -o 'Done [0-9]* runs in [0-9]* second(s)'), no panic"
done
echo "fuzz: ok ($runs executions per target)"
