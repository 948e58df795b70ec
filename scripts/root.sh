#!/usr/bin/env bash
# PostgreSQL 17 and 19 come from Debian roots this script makes (Debian 12,
# where the project is developed, ships neither): 17.12 from Debian 13
# (trixie), 19 from experimental on top of sid; and Debian's own 18 (sid),
# where 18's .deb is built and tested (the host's 18 is a relocatable tree). A root is made once with
# debootstrap and kept in $ALERTS_PG_CACHE/roots; the server, its headers,
# pg_regress and the build tools are installed in it from Debian's archive
# (the host's own apt source), nothing else is reached.
#
# Everything for these versions runs inside the root, as root: the
# checkout is bind-mounted at its own path, the host's cargo and rustup
# homes at root's, /proc and /dev from the host; the server runs as the
# root's postgres user. Mounts are undone when the command ends.
#   root.sh VERSION make            make the root (idempotent)
#   root.sh VERSION run CMD ARGS... run CMD in the checkout inside the root,
#                                   with ALERTS_PG=VERSION and a target dir of its own
#                                   (kept in the root with ALERTS_BUILD_CACHE set)
#   root.sh VERSION path            print the root's directory
set -euo pipefail
cd "$(dirname "$0")/.."
v=${1:?usage: root.sh 17|18|19 make|run|path ...}; what=${2:?usage: root.sh VERSION make|run|path}; shift 2
ALERTS_PG_CACHE=${ALERTS_PG_CACHE:-/var/cache/alerts-pg}
case "$v" in
  17) suite=trixie; name=trixie-17 ;;
  18) suite=sid; name=sid-18 ;;
  19) suite=sid; name=experimental-19 ;;
  *) echo "root.sh: PostgreSQL $v does not come from a Debian root here: use 17, 18 or 19" >&2; exit 2 ;;
esac
ROOT=$ALERTS_PG_CACHE/roots/$name
APT=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q -y)
BUILD_PKGS=(clang libclang-dev libicu-dev gcc libc6-dev pkg-config ca-certificates perl postgresql-common
            procps util-linux python3 python3-psycopg)

# The host's Debian archive (its first apt source), so the root reaches
# what the host reaches.
mirror() {
  local uri
  uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$uri" ] || { echo "root.sh: the host has no Debian apt source to copy" >&2; exit 1; }
  echo "$uri"
}

make_root() {
  if [ -e "$ROOT/.alerts-ready" ]; then
    # a root made before a package joined BUILD_PKGS gets it now
    local missing=() p
    for p in "${BUILD_PKGS[@]}"; do
      inside dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    mount_all
    local ok=0
    (inside apt-get "${APT[@]}" update && inside env DEBIAN_FRONTEND=noninteractive apt-get "${APT[@]}" install "${missing[@]}" \
       && inside apt-get clean) >> "$ROOT.log" 2>&1 && ok=1
    unmount_all
    [ "$ok" = 1 ] || { tail -20 "$ROOT.log"; echo "root.sh: installing ${missing[*]} in $ROOT failed" >&2; exit 1; }
    echo "root: added ${missing[*]} to $ROOT"
    return 0
  fi
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  local uri t=$SECONDS; uri=$(mirror)
  echo "root: making $ROOT (debootstrap $suite, then PostgreSQL $v)"
  unmount_all
  rm -rf "$ROOT"; mkdir -p "$(dirname "$ROOT")"
  debootstrap --variant=minbase "$suite" "$ROOT" "$uri" >/dev/null
  # nothing installed in the root starts a service
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"
  echo "deb $uri $suite main" > "$ROOT/etc/apt/sources.list"
  [ "$v" = 19 ] && echo "deb $uri experimental main" >> "$ROOT/etc/apt/sources.list"
  mount_all
  local ok=0
  (
    inside apt-get "${APT[@]}" update
    inside env DEBIAN_FRONTEND=noninteractive apt-get "${APT[@]}" install "${BUILD_PKGS[@]}"
    # no cluster of Debian's own: the tests make theirs
    echo "create_main_cluster = false" >> "$ROOT/etc/postgresql-common/createcluster.conf"
    if [ "$v" = 19 ]; then
      inside env DEBIAN_FRONTEND=noninteractive apt-get "${APT[@]}" -t experimental install \
        postgresql-19 postgresql-server-dev-19
    else
      inside env DEBIAN_FRONTEND=noninteractive apt-get "${APT[@]}" install \
        "postgresql-$v" "postgresql-server-dev-$v"
    fi
    inside apt-get clean
  ) > "$ROOT.log" 2>&1 && ok=1
  unmount_all
  [ "$ok" = 1 ] || { tail -30 "$ROOT.log"; echo "root.sh: making the $suite root failed (log: $ROOT.log)" >&2; exit 1; }
  touch "$ROOT/.alerts-ready"
  echo "root: $ROOT ready in $((SECONDS - t)) s (postgresql-$v $(chroot "$ROOT" dpkg-query -W -f '${Version}' "postgresql-$v"))"
}

inside() { chroot "$ROOT" "$@"; }

MOUNTS=()
bind() {  # bind SRC DEST-IN-ROOT
  mkdir -p "$ROOT$2"
  mountpoint -q "$ROOT$2" || { mount --bind "$1" "$ROOT$2"; MOUNTS+=("$ROOT$2"); }
}
mount_all() {
  bind /proc /proc
  bind /dev /dev
  bind /dev/shm /dev/shm
  bind "$PWD" "$PWD"
  [ -d "$HOME/.cargo" ] && bind "$HOME/.cargo" /root/.cargo
  [ -d "$HOME/.rustup" ] && bind "$HOME/.rustup" /root/.rustup
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  # the host's CA bundle, which may hold a proxy's CA the root's lacks, for
  # cargo to reach the registry from inside (CARGO_HTTP_CAINFO below)
  mkdir -p "$ROOT/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/alerts-host-ca.crt" 2>/dev/null || true
}
unmount_all() {
  local m i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" || true; done
  MOUNTS=()
  # any left by an earlier run that was killed
  for m in /root/.rustup /root/.cargo "$PWD" /dev/shm /dev /proc; do
    mountpoint -q "$ROOT$m" 2>/dev/null && { umount "$ROOT$m" 2>/dev/null || umount -l "$ROOT$m"; }
  done
  return 0
}

case "$what" in
  make) make_root ;;
  path) echo "$ROOT" ;;
  run)
    make_root
    # the build's target dir: the checkout's, or with ALERTS_BUILD_CACHE
    # set (CI's fresh clones, .ci/run) one kept inside the root itself
    target=$PWD/target/root-$v
    [ -n "${ALERTS_BUILD_CACHE:-}" ] && target=/var/cache/alerts-build/target-$v
    trap unmount_all EXIT
    mount_all
    chroot "$ROOT" env -i HOME=/root PATH="/root/.cargo/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
      LANG=C.UTF-8 TERM=dumb CI="${CI:-}" CARGO_HTTP_CAINFO=/etc/ssl/alerts-host-ca.crt ALERTS_PG="$v" ALERTS_IN_ROOT=1 \
      ALERTS_QUICK="${ALERTS_QUICK:-}" ALERTS_ROOT_SUITES="${ALERTS_ROOT_SUITES:-}" ALERTS_DIFF_QUERIES="${ALERTS_DIFF_QUERIES:-1500}" ALERTS_PACKAGED="${ALERTS_PACKAGED:-}" CARGO_TARGET_DIR="$target" \
      bash -c 'cd "$1" && shift && exec "$@"' bash "$PWD" "$@"
    ;;
  *) echo "usage: root.sh VERSION make|run|path" >&2; exit 2 ;;
esac
