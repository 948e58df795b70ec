#!/usr/bin/env bash
# Installs everything the project needs on Debian 12 as root, idempotently:
# PostgreSQL 15 server + headers, clang for bindgen, sudo (cargo pgrx --runas),
# the RUM peer for benchmarks, and cargo-pgrx 0.18.0 initialised for pg15.
set -euo pipefail

PGRX_VERSION=0.18.0
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo postgresql-15-rum python3)

need=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Debian's postgresql package starts a cluster on 5432 we do not use; leave it be.

if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
  echo "setup: installing cargo-pgrx $PGRX_VERSION (about 6 minutes)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

if ! grep -qs "pg15" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
  echo "setup: cargo pgrx init --pg15"
  cargo pgrx init --pg15 "$PG_CONFIG"
fi
echo "setup: ok"
