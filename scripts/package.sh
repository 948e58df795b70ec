#!/usr/bin/env bash
# Builds the release artifacts into target/dist/ for each PostgreSQL major
# (ALERTS_PGS, default "15 16 17 18 19"), from `cargo pgrx package`'s tree:
#   alerts-<version>-pg<NN>-linux-x86_64.tar.gz   every major: lib/ (the
#       library) and share/extension/ (the control file, every SQL script:
#       fresh install and each upgrade), as CloudNativePG mounts an
#       extension image; install.sh / uninstall.sh (any server, given its
#       pg_config) and BUILD-INFO;
#   postgresql-NN-alerts_<version>_amd64.deb      Debian's layout (the
#       PostgreSQL project's package naming and paths), for each server
#       installed in Debian's paths: 15 here, 17, 18 and 19 in their Debian
#       roots (scripts/root.sh, where they are built); 16 has no Debian
#       layout here. 18's tarball is built on this host (for its relocatable
#       tree), its .deb in the sid root;
#   SHA256SUMS over all of them, and BUILD-INFO (version, commit, servers).
# A .deb built against headers that version composite datums (the November
# 2026 minors, CVE-2026-6460) calls heap_datum_check, which earlier minors
# lack, so it depends on at least the minor it was built with.
# The version is Cargo.toml's (alerts.control takes it at build time); the
# commit is HEAD's, marked "-dirty" when the tree has uncommitted changes.
# Needs what scripts/setup.sh installs (run it first, or run scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${ALERTS_PGS:-15 16 17 18 19}
# ALERTS_PACKAGE_PART=1: one version's part of a run (inside its root),
# adding to the run's target/dist and stage
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "package: no version in Cargo.toml" >&2; exit 1; }
if [ -n "${ALERTS_COMMIT:-}" ]; then commit=$ALERTS_COMMIT  # a part's, from its run
else
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  [ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
fi
dist=target/dist stage=target/dist-stage
PART=${ALERTS_PACKAGE_PART:-0}
[ "$PART" = 1 ] || rm -rf "$dist" "$stage"
mkdir -p "$dist" "$stage"
[ "$PART" = 1 ] && [ -s "$stage/BUILD-INFO" ] || {
  echo "alerts $version"
  echo "commit $commit"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME") $(uname -m)"
} > "$stage/BUILD-INFO"

for v in $VERSIONS; do
  # 17 and 19: built and packaged inside their Debian roots
  if { [ "$v" = 17 ] || [ "$v" = 19 ]; } && [ "${ALERTS_IN_ROOT:-0}" != 1 ]; then
    bash scripts/root.sh "$v" run env ALERTS_PACKAGE_PART=1 ALERTS_PGS="$v" ALERTS_COMMIT="$commit" \
      bash scripts/package.sh >/dev/null
    echo "package: built for PostgreSQL $v in its Debian root"
    continue
  fi
  # 18: the tarball here, the .deb in the sid root (Debian's postgresql-18)
  if [ "$v" = 18 ] && [ "${ALERTS_IN_ROOT:-0}" != 1 ]; then
    bash scripts/root.sh 18 run env ALERTS_PACKAGE_PART=1 ALERTS_PGS=18 ALERTS_COMMIT="$commit" ALERTS_DEB_ONLY=1 \
      bash scripts/package.sh >/dev/null
    echo "package: the .deb for PostgreSQL 18 built in its Debian root"
  fi
  (
    export ALERTS_PG=$v
    source scripts/pg.sh
    pg_require
    if [ "${ALERTS_IN_ROOT:-0}" = 1 ] && ! grep -qs "^pg$v = " "$HOME/.pgrx/config.toml"; then
      cargo pgrx init "--pg$v" "$PG_CONFIG" >/dev/null
    fi
    echo "package: building for $("$PG_CONFIG" --version)"
    log=target/package-pg$v.log
    # pgrx's tree anew: a kept target dir (ALERTS_BUILD_CACHE) holds earlier builds' files
    rm -rf "${CARGO_TARGET_DIR:-target}/release/alerts-pg$v"
    CARGO="$PWD/scripts/cargo-rv.sh" cargo-pgrx pgrx package --pg-config "$PG_CONFIG" --no-default-features --features "pg$v" > "$log" 2>&1 \
      || { tail -30 "$log"; echo "package: the build for $v failed (all of it in $log)" >&2; exit 1; }
    tree=${CARGO_TARGET_DIR:-target}/release/alerts-pg$v
    lib=$tree$("$PG_CONFIG" --pkglibdir)/alerts.so
    ext=$tree$("$PG_CONFIG" --sharedir)/extension
    grep -qx "default_version = '$version'" "$ext/alerts.control" \
      || { echo "package: alerts.control does not say default_version = '$version'" >&2; exit 1; }

    # The tarball: every file a server needs, and the scripts that put
    # them where its pg_config says.
    name=alerts-$version-pg$v-linux-x86_64
    t=$stage/$name${ALERTS_DEB_ONLY:+-deb}
    mkdir -p "$t/lib" "$t/share/extension"
    install -m 0755 "$lib" "$t/lib/alerts.so"
    install -m 0644 "$ext/alerts.control" "$ext/alerts--$version.sql" "$t/share/extension/"
    for f in sql/alerts--*.sql; do install -m 0644 "$f" "$t/share/extension/"; done
    for s in install uninstall; do
      sed -e "s/@VERSION@/$version/g" -e "s/@MAJOR@/$v/g" -e "s/@COMMIT@/$commit/g" \
        "scripts/dist/$s.sh" > "$t/$s.sh"
      chmod 0755 "$t/$s.sh"
    done
    { cat "$stage/BUILD-INFO"; echo "for $("$PG_CONFIG" --version)"; } > "$t/BUILD-INFO"
    [ -n "${ALERTS_DEB_ONLY:-}" ] || tar -czf "$dist/$name.tar.gz" --owner=0 --group=0 -C "$stage" "$name"

    # The .deb, in Debian's paths, for the server installed in them.
    if [ "$("$PG_CONFIG" --pkglibdir)" = "/usr/lib/postgresql/$v/lib" ]; then
      d=$stage/deb-$v
      mkdir -p "$d/DEBIAN" "$d/usr/lib/postgresql/$v/lib" "$d/usr/share/postgresql/$v/extension" \
               "$d/usr/share/doc/postgresql-$v-alerts"
      install -m 0644 "$t/lib/alerts.so" "$d/usr/lib/postgresql/$v/lib/"
      install -m 0644 "$t"/share/extension/* "$d/usr/share/postgresql/$v/extension/"
      install -m 0644 "$t/BUILD-INFO" "$d/usr/share/doc/postgresql-$v-alerts/"
      size=$(du -sk --exclude=DEBIAN "$d" | cut -f1)
      server="postgresql-$v"
      if grep -qs HeapTupleHeaderIsVersionedDatum "$("$PG_CONFIG" --includedir-server)/access/htup_details.h"; then
        server="postgresql-$v (>= $("$PG_CONFIG" --version | awk '{print $2}'))"
      fi
      cat > "$d/DEBIAN/control" <<CONTROL
Package: postgresql-$v-alerts
Version: $version
Architecture: amd64
Maintainer: alerts developers <alerts@invalid>
Depends: $server, libc6 (>= 2.34)
Section: database
Priority: optional
Installed-Size: $size
Description: filtered alert-history pages for PostgreSQL $v
 Bloom bitmaps over JSONB alert attributes, kept by a trigger, and an
 exact, newest-first page walk: CREATE EXTENSION alerts.
 Built from commit $commit.
CONTROL
      (cd "$d" && find usr -type f -exec md5sum {} + | sort -k2 > DEBIAN/md5sums)
      dpkg-deb --root-owner-group -Zxz --build "$d" "$dist/postgresql-$v-alerts_${version}_amd64.deb" >/dev/null
    fi
  )
done
[ "$PART" = 1 ] && exit 0
cp "$stage/BUILD-INFO" "$dist/BUILD-INFO"
(cd "$dist" && sha256sum -- *.tar.gz $(ls -- *.deb 2>/dev/null) > SHA256SUMS)
echo "package: target/dist (alerts $version, commit $commit):"
(cd "$dist" && ls -l -- *.tar.gz $(ls -- *.deb 2>/dev/null) | awk '{print "  " $NF " (" $5 " bytes)"}')
