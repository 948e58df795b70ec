#!/usr/bin/env bash
# PostgreSQL 18 and later without writing to the server's directories, as
# CloudNativePG mounts an extension image: the release tarball unpacked in a
# directory of its own (lib/ and share/extension/), the server told where
# with extension_control_path = '$system:DIR/share' and dynamic_library_path
# = '$libdir:DIR/lib', none of our files in the server's own directories;
# then CREATE EXTENSION and the pg_regress suites. The server's files and
# settings are put back afterwards. Needs the cluster of scripts/cluster.sh
# and the package installed (tests/shell/package.sh install).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
v=$PG_VERSION
if [ "$v" -lt 18 ]; then echo "SKIPPED: extension_control_path is PostgreSQL 18's"; exit 0; fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
tarball=target/dist/alerts-$version-pg$v-linux-x86_64.tar.gz
[ -f "$tarball" ] || fail "$tarball is missing: run bash scripts/package.sh"
libdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
# a directory the server's user reads, as an image's mount is
dir=${ALERTS_CNPG_DIR:-/var/tmp/alerts-extensions-pg$v}/alerts
rm -rf "$dir"; mkdir -p "$dir"
tar -xzf "$tarball" -C "$dir" --strip-components=1
chmod -R a+rX "$(dirname "$dir")"
[ -f "$dir/lib/alerts.so" ] && [ -f "$dir/share/extension/alerts.control" ] || fail "the tarball has no lib/ and share/extension/"

# the server's own copies aside, restored whatever happens
aside=target/control-path-aside-pg$v
rm -rf "$aside"; mkdir -p "$aside"
mv "$libdir/alerts.so" "$extdir"/alerts.control "$extdir"/alerts--*.sql "$aside/"
restore() {
  q -d postgres -c "ALTER SYSTEM RESET extension_control_path" -c "ALTER SYSTEM RESET dynamic_library_path" \
    -c "SELECT pg_reload_conf()" >/dev/null || true
  for f in "$aside"/*; do
    case "$f" in *.so) mv -f "$f" "$libdir/" ;; *) mv -f "$f" "$extdir/" ;; esac
  done
}
trap restore EXIT
left=$(ls "$libdir"/alerts.so "$extdir"/alerts* 2>/dev/null || true)
[ -z "$left" ] || fail "files of ours still in the server's directories: $left"

q -d postgres -c "ALTER SYSTEM SET extension_control_path = '\$system:$dir/share'" \
  -c "ALTER SYSTEM SET dynamic_library_path = '\$libdir:$dir/lib'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
found=$(qa -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'alerts'")
[ "$found" = "$version" ] || fail "pg_available_extensions does not list alerts $version from $dir/share (got '$found')"
dropdb --if-exists alerts_control_path; createdb alerts_control_path
q -d alerts_control_path -c "CREATE EXTENSION alerts" \
  -c "SELECT alerts_bloom('{\"team\": \"t1\"}') IS NOT NULL" >/dev/null
probin=$(qa -d alerts_control_path -c "SELECT DISTINCT probin FROM pg_proc WHERE probin IS NOT NULL AND pronamespace = 'public'::regnamespace")
[ "$probin" = alerts ] || fail "the functions name the library as '$probin', not 'alerts' (dynamic_library_path would not find it)"
echo "  CREATE EXTENSION alerts from $dir (control and scripts by extension_control_path, library by dynamic_library_path)"
# the base suites (every SQL function, the trigger, plain SQL through the
# node): the whole suite already ran on this version from the server's own
# directories
ALERTS_REGRESS_SERIAL=1 bash tests/shell/regress.sh "target/regress-control-path-pg$v" tests/schedule_base
echo "control_path: ok (PostgreSQL $v, the base pg_regress suites with the extension outside the server's directories)"
