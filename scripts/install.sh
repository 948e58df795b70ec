#!/usr/bin/env bash
# Builds the extension (release) for one PostgreSQL version (ALERTS_PG=15|16|17|18|19,
# see scripts/pg.sh) and installs it into that server. Each file is written
# beside its target and renamed over it, so backends that have the old
# library mapped keep running and new ones load the new one (a copy in place
# can crash a live backend).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pg.sh
pg_require
# inside a Debian root (scripts/root.sh) pgrx's own config is the root's
if [ "${ALERTS_IN_ROOT:-0}" = 1 ] && ! grep -qs "^pg$PG_VERSION = " "$HOME/.pgrx/config.toml"; then
  cargo pgrx init "--pg$PG_VERSION" "$PG_CONFIG" >/dev/null
fi
# pgrx's tree anew: a kept target dir (ALERTS_BUILD_CACHE) holds earlier builds' files
rm -rf "${CARGO_TARGET_DIR:-target}/release/alerts-pg$PG_VERSION"
CARGO="$PWD/scripts/cargo-rv.sh" cargo-pgrx pgrx package --pg-config "$PG_CONFIG" --no-default-features --features "pg$PG_VERSION" >/dev/null
pkg=${CARGO_TARGET_DIR:-target}/release/alerts-pg$PG_VERSION
libdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
place() {  # place SRC DIR
  local name; name=$(basename "$1")
  install -m 0644 "$1" "$2/.$name.new"
  mv -f "$2/.$name.new" "$2/$name"
}
place "$pkg$libdir/alerts.so" "$libdir"
chmod 0755 "$libdir/alerts.so"
for f in "$pkg$extdir"/alerts*; do place "$f" "$extdir"; done
# released versions' scripts and the upgrade scripts between them
for f in sql/alerts--*.sql; do [ -e "$f" ] && place "$f" "$extdir"; done
echo "install: alerts for PostgreSQL $PG_VERSION installed into $libdir and $extdir"
