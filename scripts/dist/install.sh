#!/bin/sh
# Installs alerts @VERSION@ (built for PostgreSQL @MAJOR@, commit @COMMIT@)
# into a PostgreSQL @MAJOR@ server, from this directory:
#   PG_CONFIG=/path/to/pg_config ./install.sh    (or the first pg_config on PATH)
# Run it as the user that owns the server's files, or as root. It checks
# the server's major version and that it can write where the files go
# before it copies anything; each file is written beside its target and
# renamed over it, so running backends keep the library they loaded.
# Then, in each database: CREATE EXTENSION alerts; (or ALTER EXTENSION
# alerts UPDATE; after an upgrade).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
major=@MAJOR@
die() { echo "install.sh: $*" >&2; exit 1; }

pgc=${PG_CONFIG:-$(command -v pg_config 2>/dev/null || true)}
[ -n "$pgc" ] || die "no pg_config on PATH: give the server's as PG_CONFIG=/path/to/pg_config ./install.sh (Debian: /usr/lib/postgresql/$major/bin/pg_config)"
[ -x "$pgc" ] && [ ! -d "$pgc" ] || die "PG_CONFIG=$pgc is not an executable pg_config"
server=$("$pgc" --version 2>/dev/null) || die "$pgc --version failed: is PG_CONFIG the server's pg_config?"
found=$(echo "$server" | sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p')
[ "$found" = "$major" ] || die "this package is built for PostgreSQL $major, and $pgc belongs to $server: use alerts-@VERSION@-pg$found-linux-x86_64.tar.gz for it. Nothing was copied."
libdir=$("$pgc" --pkglibdir)
extdir=$("$pgc" --sharedir)/extension
for d in "$libdir" "$extdir"; do
  [ -d "$d" ] || die "$d (from $pgc) does not exist: is this the server's pg_config? Nothing was copied."
  [ -w "$d" ] || die "cannot write to $d: run as the owner of the server's files or as root (sudo -E ./install.sh). Nothing was copied."
done

place() {  # place FILE DIR MODE
  name=$(basename "$1")
  cp "$1" "$2/.$name.new"
  chmod "$3" "$2/.$name.new"
  mv -f "$2/.$name.new" "$2/$name"
  echo "  $2/$name"
}
echo "install.sh: alerts @VERSION@ into $server ($pgc):"
place "$here/lib/alerts.so" "$libdir" 0755
for f in "$here"/share/extension/*; do place "$f" "$extdir" 0644; done
echo "install.sh: done. In each database: CREATE EXTENSION alerts; (ALTER EXTENSION alerts UPDATE; where an older version is installed)."
