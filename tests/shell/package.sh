#!/usr/bin/env bash
# The release artifacts of scripts/package.sh (target/dist), installed and
# removed the way a database host without Rust would, for the version of
# ALERTS_PG. Every command here runs under `env -i` with a PATH of the
# system's directories only, where no cargo, rustc or cargo-pgrx is.
#   package.sh install   removes the extension's files from the server,
#                        then installs the .deb with dpkg -i (15, Debian's
#                        paths) or the tarball with its install.sh (16, 18);
#                        scripts/test.sh then runs every suite on them
#   package.sh remove    dpkg -r / uninstall.sh leave no file of ours;
#                        install.sh refuses another major's pg_config, a
#                        missing one and a user who cannot write, copying
#                        nothing; then installs again for the steps after
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/shell/lib.sh
mode=${1:?usage: package.sh install|remove}
v=$PG_VERSION
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
libdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
deb=target/dist/postgresql-$v-alerts_${version}_amd64.deb
# the .deb is for a server in Debian's paths (18's wheel takes the tarball)
[ "$libdir" = "/usr/lib/postgresql/$v/lib" ] || deb=/nonexistent
tarball=target/dist/alerts-$version-pg$v-linux-x86_64.tar.gz
[ -f "$tarball" ] || fail "$tarball is missing: run bash scripts/package.sh"
# dpkg wants the sbin directories too; none of them holds a Rust tool.
bare=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
"${bare[@]}" sh -c 'for t in cargo rustc cargo-pgrx; do command -v $t && exit 1; done; exit 0' >/dev/null \
  || fail "a Rust tool is on the bare PATH"
ours() { ls "$libdir"/alerts.so "$extdir"/alerts.control "$extdir"/alerts--*.sql 2>/dev/null || true; }
unpacked=target/dist-test/pg$v
unpack() { rm -rf "$unpacked"; mkdir -p "$unpacked"; tar -xzf "$tarball" -C "$unpacked"; echo "$unpacked/alerts-$version-pg$v-linux-x86_64"; }
deb_installed() { dpkg-query -W -f='${Status}' "postgresql-$v-alerts" 2>/dev/null | grep -q "install ok installed"; }

install_package() {
  if [ -f "$deb" ]; then
    "${bare[@]}" dpkg -i "$deb" | sed 's/^/  /'
    deb_installed || fail "dpkg -i did not install postgresql-$v-alerts"
    echo "  dpkg -L: $(dpkg -L "postgresql-$v-alerts" | grep -c 'alerts') files of ours"
  else
    local dir; dir=$(unpack)
    "${bare[@]}" PG_CONFIG="$PG_CONFIG" "$dir/install.sh" | sed 's/^/  /'
  fi
  [ -f "$libdir/alerts.so" ] && [ -f "$extdir/alerts--$version.sql" ] && [ -f "$extdir/alerts--0.2.0--$version.sql" ] \
    || fail "the package did not install every file"
}

case "$mode" in
  install)
    # Nothing of a build from source stays behind.
    if deb_installed; then "${bare[@]}" dpkg -r "postgresql-$v-alerts" >/dev/null; fi
    rm -f "$libdir/alerts.so" "$extdir"/alerts.control "$extdir"/alerts--*.sql
    [ -z "$(ours)" ] || fail "files left before the install: $(ours)"
    install_package
    echo "package: alerts $version installed on PostgreSQL $v from $( [ -f "$deb" ] && basename "$deb" || basename "$tarball")"
    ;;
  remove)
    if [ -f "$deb" ]; then
      "${bare[@]}" dpkg -r "postgresql-$v-alerts" | sed 's/^/  /'
      ! deb_installed || fail "dpkg -r left the package installed"
    else
      dir=$(unpack)
      "${bare[@]}" PG_CONFIG="$PG_CONFIG" "$dir/uninstall.sh" | sed 's/^/  /'
    fi
    [ -z "$(ours)" ] || fail "files of ours left after the removal: $(ours)"
    echo "  removed: no file of ours left in $libdir or $extdir"

    # Bad input: a clear message, and nothing copied.
    dir=$(unpack)
    refuse() {  # refuse WHAT EXPECTED-MESSAGE COMMAND...
      local what=$1 expect=$2; shift 2
      local out
      if out=$("$@" 2>&1); then fail "install.sh accepted $what: $out"; fi
      echo "$out" | grep -q "$expect" || fail "install.sh on $what said: $out"
      [ -z "$(ours)" ] || fail "install.sh on $what copied: $(ours)"
      echo "  refused $what: $(echo "$out" | tail -1)"
    }
    other=
    for o in 15 16 18; do
      [ "$o" = "$v" ] && continue
      c=$(ALERTS_PG=$o; source scripts/pg.sh; echo "$PG_CONFIG")
      [ -x "$c" ] && other=$c && break
    done
    if [ -n "$other" ]; then
      refuse "another major's pg_config" "built for PostgreSQL $v" "${bare[@]}" PG_CONFIG="$other" "$dir/install.sh"
    else
      echo "SKIPPED one check: no other PostgreSQL major here to point install.sh at"
    fi
    refuse "a missing pg_config" "not an executable pg_config" "${bare[@]}" PG_CONFIG=/nonexistent/pg_config "$dir/install.sh"
    refuse "no pg_config on PATH" "no pg_config on PATH" env -i PATH=/nonexistent "$dir/install.sh"
    chmod -R a+rX "$unpacked"
    refuse "a user who cannot write there" "cannot write to" runuser -u nobody -- "${bare[@]}" PG_CONFIG="$PG_CONFIG" "$dir/install.sh"

    # Installed again, for the steps after this one.
    install_package >/dev/null
    echo "package: removal and bad input checked on PostgreSQL $v; installed again"
    ;;
  *) fail "usage: package.sh install|remove" ;;
esac
