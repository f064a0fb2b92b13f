#!/usr/bin/env bash
# Builds OCI images with buildah from files already on this machine, no registry:
#   deploy/image/build.sh posthorn BINARY SITE_DIR [TAG…]   the product (FROM scratch)
#   deploy/image/build.sh postgres [TAG…]                   the demo's PostgreSQL
#   deploy/image/build.sh release    both, from the release build (`make image`):
#     localhost/posthorn:latest and :<version>, localhost/posthorn-postgres:15
# Each root file system holds its programs, exactly the shared libraries `ldd` lists for
# them, and the few files they read (CA bundle, passwd). Same inputs, same image: file
# times and the image's dates are pinned (--timestamp 0).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="${POSTHORN_IMAGE_WORK:-/var/tmp/posthorn-image}"
APP_UID=10001
PG_UID=999

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Copies each program's libraries (as ldd resolves them here) and the loader into $1.
copy_libraries() {
  local root="$1"; shift
  local lib
  ldd "$@" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u |
    while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
}

# /etc as a program in the image needs it: users, name lookup, the CA bundle.
base_files() {
  local root="$1" name="$2" uid="$3"
  mkdir -p "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/:/sbin/nologin\n%s:x:%s:%s:%s:/nonexistent:/sbin/nologin\n' \
    "$name" "$uid" "$uid" "$name" >"$root/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\n' "$name" "$uid" >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
}

# Every file time set to 0 and ownership given by the Containerfile: the context's own
# dates and owners do not reach the image.
settle() { find "$1" -exec touch -h -d @0 {} +; }

# A build folder of its own, so that builds at the same time do not mix (the layer cache
# goes by content, not by folder).
context() { mkdir -p "$WORK" && mktemp -d "$WORK/context.XXXXXX"; }

bud() {
  local context="$1" containerfile="$2"; shift 2
  local tags=()
  for t in "$@"; do tags+=(--tag "$t"); done
  # Another label, another image of the same files (a test's "new release").
  [ -z "${POSTHORN_IMAGE_LABEL:-}" ] || tags+=(--label "posthorn.build=$POSTHORN_IMAGE_LABEL")
  buildah bud --quiet --layers --timestamp 0 --format oci -f "$containerfile" "${tags[@]}" "$context"
}

build_posthorn() {
  local binary="$1" site="$2"; shift 2
  [ -x "$binary" ] || { echo "no binary at $binary (make build first)" >&2; exit 1; }
  [ -f "$site/hash.txt" ] || { echo "no site at $site (make build first)" >&2; exit 1; }
  local ctx; ctx="$(context)"
  mkdir -p "$ctx/base" "$ctx/app/usr/bin" "$ctx/app/usr/share/posthorn"
  # Two layers: what changes with Debian (libraries, certificates), then the product.
  copy_libraries "$ctx/base" "$binary"
  base_files "$ctx/base" posthorn "$APP_UID"
  strip -o "$ctx/app/usr/bin/posthorn" "$binary"
  cp -r "$site" "$ctx/app/usr/share/posthorn/site"
  settle "$ctx"
  cp "$HERE/Containerfile" "$ctx/Containerfile"
  log "buildah bud posthorn → $*"
  bud "$ctx" "$ctx/Containerfile" "$@"
  rm -rf "$ctx"
}

build_postgres() {
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || apt_install postgresql
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
  local dir="${bin%/bin}" version="${bin%/bin}"
  version="${version##*/}"
  local ctx sh
  ctx="$(context)"; sh="$(readlink -f /bin/sh)"
  mkdir -p "$ctx/root/bin" "$ctx/root$dir/lib" "$ctx/data/data" \
    "$ctx/root/usr/share/postgresql" "$ctx/root/usr/local/bin"
  cp -r "$bin" "$ctx/root$dir/bin"
  # The JIT's LLVM alone is larger than everything else: the image runs with jit=off.
  find "$dir/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp {} "$ctx/root$dir/lib/" \;
  cp -r "/usr/share/postgresql/$version" "$ctx/root/usr/share/postgresql/"
  cp -r /usr/share/zoneinfo "$ctx/root/usr/share/"
  # initdb runs its steps through /bin/sh; the entry script needs one too.
  cp "$sh" "$ctx/root/bin/sh"
  copy_libraries "$ctx/root" "$ctx/root/bin/sh" "$ctx/root$dir"/bin/* "$ctx/root$dir"/lib/*.so
  base_files "$ctx/root" postgres "$PG_UID"
  sed "s|@PGBIN@|$dir/bin|" "$HERE/postgres-start.sh" >"$ctx/root/usr/local/bin/postgres-start"
  chmod 755 "$ctx/root/usr/local/bin/postgres-start"
  chmod 700 "$ctx/data/data"
  settle "$ctx"
  sed "s|@PG_UID@|$PG_UID|g" "$HERE/postgres.Containerfile" >"$ctx/Containerfile"
  log "buildah bud postgres $version → $*"
  bud "$ctx" "$ctx/Containerfile" "$@"
  rm -rf "$ctx"
}

apt_install() {
  log "installing $* (apt)"
  local sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get install -y "$@" >/dev/null 2>&1 \
    || { "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y "$@" >/dev/null; }
}

# What `make image` runs after the release build.
build_release() {
  local target="${CARGO_TARGET_DIR:-$ROOT/target}" version started=$SECONDS
  version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"
  build_posthorn "$target/release/posthorn" "$target/site" \
    localhost/posthorn:latest "localhost/posthorn:$version"
  build_postgres localhost/posthorn-postgres:15
  buildah images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' | grep -E '/posthorn(-postgres)?:' >&2
  log "images built in $((SECONDS - started)) s"
}

command -v buildah >/dev/null || apt_install buildah
case "${1:-}" in
  release) build_release ;;
  posthorn) shift; build_posthorn "$@" ;;
  postgres) shift; build_postgres "$@" ;;
  *) echo "usage: $0 release | posthorn BINARY SITE_DIR TAG… | postgres TAG…" >&2; exit 2 ;;
esac
