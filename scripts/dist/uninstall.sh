#!/bin/sh
# Removes the files install.sh copied (alerts @VERSION@, PostgreSQL @MAJOR@)
# from a server: PG_CONFIG=/path/to/pg_config ./uninstall.sh, or the first
# pg_config on PATH. Drop the extension from every database first (DROP
# EXTENSION alerts;): a database that still has it cannot load it after.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
major=@MAJOR@
die() { echo "uninstall.sh: $*" >&2; exit 1; }

pgc=${PG_CONFIG:-$(command -v pg_config 2>/dev/null || true)}
[ -n "$pgc" ] || die "no pg_config on PATH: give the server's as PG_CONFIG=/path/to/pg_config ./uninstall.sh"
[ -x "$pgc" ] && [ ! -d "$pgc" ] || die "PG_CONFIG=$pgc is not an executable pg_config"
server=$("$pgc" --version 2>/dev/null) || die "$pgc --version failed: is PG_CONFIG the server's pg_config?"
found=$(echo "$server" | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')
[ "$found" = "$major" ] || die "this package is for PostgreSQL $major, and $pgc belongs to $server. Nothing was removed."
libdir=$("$pgc" --pkglibdir)
extdir=$("$pgc" --sharedir)/extension
for d in "$libdir" "$extdir"; do
  [ -w "$d" ] || die "cannot write to $d: run as the owner of the server's files or as root. Nothing was removed."
done

echo "uninstall.sh: alerts from $server ($pgc):"
rm_one() {  # rm_one DIR NAME
  if [ -e "$1/$2" ]; then rm -f "$1/$2"; echo "  removed $1/$2"; else echo "  not there: $1/$2"; fi
}
rm_one "$libdir" alerts.so
for f in "$here"/share/extension/*; do rm_one "$extdir" "$(basename "$f")"; done
echo "uninstall.sh: done."
