#!/usr/bin/env bash
# Posthorn's one build script: installs what is missing (idempotently), builds the
# server and the WASM bundle, runs a private PostgreSQL when DATABASE_URL is unset,
# and runs or tests the product. Usage: .ci/dev.sh run|test|build|tools|pg|docs|sqlx|first-load
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export PATH="$HOME/.cargo/bin:$ROOT/.tools/node_modules/.bin:$ROOT/end2end/node_modules/.bin:$PATH"
WASM_BINDGEN_VERSION=0.2.130
PG_PORT="${POSTHORN_PG_PORT:-54329}"
PG_DIR="$ROOT/.pgdata"
PROFILE="${POSTHORN_PROFILE:-debug}"   # the server's: debug | release
# The browser bundle is the optimised one whatever the server's profile, so that what
# `make test` checks is what `make run` serves; wasm-dev is a quicker build for local work.
WASM_PROFILE="${POSTHORN_WASM_PROFILE:-wasm-release}"   # wasm-release | wasm-dev
BINARYEN_VERSION=132.0.0
ESBUILD_VERSION=0.28.2
MDBOOK_VERSION=0.5.4
SQLX_CLI_VERSION=0.8.6   # the sqlx crate's version in Cargo.lock
SITE="$CARGO_TARGET_DIR/site"

# Bold only on a terminal: a log file or CI's output keeps plain text.
# Each stage is stamped with the seconds since the run began (`.ci/run` sets the start), so
# a CI log gives the time of every stage.
export POSTHORN_RUN_START="${POSTHORN_RUN_START:-$(date +%s)}"
stamp() { printf '%4ss' "$(($(date +%s) - POSTHORN_RUN_START))"; }
if [ -t 2 ]; then log() { printf '\033[1m==> [%s] %s\033[0m\n' "$(stamp)" "$*" >&2; }; else log() { printf '==> [%s] %s\n' "$(stamp)" "$*" >&2; }; fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  log "installing $* (apt)"
  as_root apt-get install -y "$@" >/dev/null 2>&1 || { as_root apt-get update >/dev/null && as_root apt-get install -y "$@" >/dev/null; }
}

ensure_rust_tools() {
  if ! rustup target list --installed | grep -q wasm32-unknown-unknown; then
    log "adding the wasm32 target"; rustup target add wasm32-unknown-unknown
  fi
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
    log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (~3 min)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
}

# sqlx-cli, for the offline query data under .sqlx/ (`cargo sqlx prepare`, ~4 min to build).
ensure_sqlx_cli() {
  if [ "$(cargo sqlx --version 2>/dev/null | awk '{print $2}')" != "$SQLX_CLI_VERSION" ]; then
    log "installing sqlx-cli $SQLX_CLI_VERSION (~4 min)"
    env -u CARGO_TARGET_DIR cargo install sqlx-cli --version "$SQLX_CLI_VERSION" --no-default-features \
      --features postgres,rustls --locked --force
  fi
}

# The builds read each query's types from .sqlx/ (SQLX_OFFLINE in .cargo/config.toml).
# Prepares that data again against a freshly migrated database: with --check, it must equal
# what is committed (CI fails on stale data); without, it rewrites .sqlx/. Same target folder
# as the tests, so only app and server are checked again (prepare touches their sources).
sqlx_prepare() {
  ensure_sqlx_cli
  local db=ph_sqlx_check url="${DATABASE_URL%/*}/ph_sqlx_check"
  local psql_bin; psql_bin="$(command -v psql || echo "$(pg_bin)/psql")"
  log "offline query data (.sqlx/) against a freshly migrated database ${*:-}"
  "$psql_bin" "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
  cargo sqlx migrate run --source migrations --database-url "$url" >/dev/null
  # app's own tests included, so that a query in any target keeps its data.
  SQLX_OFFLINE=false DATABASE_URL="$url" cargo sqlx prepare --workspace "$@" \
    -- -p app -p server --features app/ssr --all-targets
}

# wasm-opt from npm's binaryen (Debian's older binaryen yields a bundle that never hydrates),
# brotli for the precompressed assets.
ensure_asset_tools() {
  command -v brotli >/dev/null || apt_install brotli
  # One npm call for both: `--no-save` prunes what the same call does not name.
  if [ "$(wasm-opt --version 2>/dev/null | awk '{print $3}')" != "${BINARYEN_VERSION%%.*}" ] ||
    [ "$(esbuild --version 2>/dev/null)" != "$ESBUILD_VERSION" ]; then
    log "installing wasm-opt (npm binaryen@$BINARYEN_VERSION) and esbuild@$ESBUILD_VERSION"
    npm install --no-audit --no-fund --no-save --prefix "$ROOT/.tools" \
      "binaryen@$BINARYEN_VERSION" "esbuild@$ESBUILD_VERSION" >/dev/null
  fi
}

# mdBook from crates.io (no prebuilt binary can be fetched here), without its `serve` and
# `watch` features (~3 min to build). Built in a temporary folder, not the project's target.
ensure_book_tools() {
  if [ "$(mdbook --version 2>/dev/null | awk '{print $2}')" != "v$MDBOOK_VERSION" ]; then
    log "installing mdBook $MDBOOK_VERSION (~3 min)"
    env -u CARGO_TARGET_DIR cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --force
  fi
  command -v python3 >/dev/null || apt_install python3
}

# The book (docs/) builds, and its links and README's resolve: files and #anchors.
check_docs() {
  ensure_book_tools
  log "the book: mdbook build docs, then its links"
  mdbook build docs
  python3 docs/check-links.py
}

ensure_postgres_binaries() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt_install postgresql; fi
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1; }

# Starts (creating if needed) the private cluster under .pgdata and exports DATABASE_URL.
ensure_private_pg() {
  ensure_postgres_binaries
  local bin; bin="$(pg_bin)"
  local run=()
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home "$PG_DIR" postgres
    run=(runuser -u postgres --)
  fi
  if [ ! -f "$PG_DIR/PG_VERSION" ]; then
    log "creating a private PostgreSQL cluster in $PG_DIR"
    mkdir -p "$PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
    "${run[@]}" "$bin/initdb" -D "$PG_DIR" -U postgres --auth=trust >/dev/null
  fi
  if "${run[@]}" "$bin/pg_ctl" -D "$PG_DIR" status >/dev/null 2>&1; then
    PG_PORT="$(cat "$PG_DIR/posthorn.port" 2>/dev/null || echo "$PG_PORT")"
  else
    # Another server may hold the port (another checkout's cluster): take the next free one.
    while (echo >"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; do PG_PORT=$((PG_PORT + 1)); done
    echo "$PG_PORT" >"$PG_DIR/posthorn.port"
    log "starting the private PostgreSQL on 127.0.0.1:$PG_PORT"
    "${run[@]}" "$bin/pg_ctl" -D "$PG_DIR" -l "$PG_DIR/server.log" -w \
      -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=${POSTHORN_PG_FSYNC:-on}" start >/dev/null
  fi
  export PGPORT="$PG_PORT"
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='posthorn'" | grep -q 1 \
    || "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE posthorn" >/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/posthorn"
}

ensure_database() {
  if [ -z "${DATABASE_URL:-}" ]; then ensure_private_pg; fi
  log "database: $DATABASE_URL"
}

build() {
  ensure_rust_tools
  ensure_asset_tools
  local cargo_profile=() bin_dir="$CARGO_TARGET_DIR/debug"
  if [ "$PROFILE" = release ]; then
    cargo_profile=(--release); bin_dir="$CARGO_TARGET_DIR/release"
  fi
  log "building the server ($PROFILE)"
  cargo build -p server "${cargo_profile[@]}"
  local out="$CARGO_TARGET_DIR/bundle"
  rm -rf "$out" && mkdir -p "$out" && rm -rf "$SITE/pkg" && mkdir -p "$SITE/pkg"
  # Two bundles: the deliveries page's own (the page support lives on, first in the
  # budget), and the one every other page loads.
  wasm_bundle posthorn --features deliveries
  wasm_bundle posthorn-full
  esbuild style/main.css --minify --log-level=warning --outfile="$out/main.min.css"
  publish posthorn css "$out/main.min.css"
  write_hashes posthorn "$SITE/hash.txt" js wasm css
  write_hashes posthorn-full "$SITE/hash-full.txt" js wasm
  log "bundle: $(cd "$SITE/pkg" && for f in *; do printf '%s %s  ' "$f" "$(stat -c %s "$f")"; done)"
  export POSTHORN_BIN="$bin_dir/posthorn"
  export LEPTOS_SITE_ROOT="$SITE"
}

# One bundle, built, optimised and published as $SITE/pkg/<name>.<hash>.js|wasm.
wasm_bundle() {
  local name="$1"; shift
  log "building the WASM bundle $name ($WASM_PROFILE${*:+, $*})"
  # Panic locations name source files: shortened to the crate's own path, they take
  # fewer bytes in the bundle (the flags repeat .cargo/config.toml's, which these replace).
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--cfg erase_components --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}/registry/src/= --remap-path-prefix=$PWD/=" \
    cargo build -p frontend --lib --target wasm32-unknown-unknown --profile "$WASM_PROFILE" "$@"
  local out="$CARGO_TARGET_DIR/bundle"
  wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name "$name" \
    "$CARGO_TARGET_DIR/wasm32-unknown-unknown/$WASM_PROFILE/frontend.wasm"
  if [ "$WASM_PROFILE" = wasm-release ]; then
    # --converge repeats -Oz until the file stops shrinking (~20 s, ~2.6 KB brotli); the
    # memory flags say what holds for a Rust bundle (nothing at low addresses, fresh memory
    # is zero), which lets it drop stores and checks (~2.8 KB brotli).
    log "wasm-opt -Oz --converge ($name)"
    wasm-opt -Oz --converge --low-memory-unused --zero-filled-memory --strip-producers --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-reference-types --enable-mutable-globals --enable-multivalue \
      "$out/${name}_bg.wasm" -o "$out/${name}_bg.wasm"
  fi
  # The script glue minified (~1.8 KB brotli of the first load).
  esbuild "$out/$name.js" --minify --format=esm --log-level=warning --outfile="$out/$name.min.js"
  publish "$name" js "$out/$name.min.js"
  publish "$name" wasm "$out/${name}_bg.wasm"
}

# Puts one file in $SITE/pkg under a content-hashed name (<name>.<hash>.<kind>), beside
# its .br and .gz, and remembers the hash for write_hashes. A page only ever links to the
# current names: the build starts from an empty pkg/.
declare -A HASHES=()
publish() {
  local name="$1" kind="$2" src="$3" hash
  hash="$(sha256sum "$src" | cut -c1-20)"
  cp "$src" "$SITE/pkg/$name.$hash.$kind"
  gzip -9 -n -k -f "$SITE/pkg/$name.$hash.$kind"
  brotli -q 11 -k -f "$SITE/pkg/$name.$hash.$kind"
  HASHES["$name.$kind"]="$hash"
}

# The hashes of one bundle (`js: …`, `wasm: …`, `css: …`), from which the server takes the
# names a page links to: hash.txt for the deliveries page, hash-full.txt for the others.
write_hashes() {
  local name="$1" file="$2" kind manifest=""; shift 2
  for kind in "$@"; do manifest+="$kind: ${HASHES[$name.$kind]}"$'\n'; done
  printf '%s' "$manifest" >"$file"
}

run() {
  build
  # On the private demo database, secrets are sealed under a key made once and kept
  # beside it (a deployment sets POSTHORN_ENCRYPTION_KEY itself).
  if [ -z "${DATABASE_URL:-}" ] && [ -z "${POSTHORN_ENCRYPTION_KEY:-}" ]; then
    local key_file="$ROOT/.tools/demo-encryption-key"
    if [ ! -s "$key_file" ]; then
      mkdir -p "$ROOT/.tools" && (umask 077 && head -c 32 /dev/urandom | base64 >"$key_file")
    fi
    export POSTHORN_ENCRYPTION_KEY="$(cat "$key_file")"
  fi
  ensure_database
  "$POSTHORN_BIN" migrate
  "$POSTHORN_BIN" seed-demo
  log "Posthorn on http://${LEPTOS_SITE_ADDR:-127.0.0.1:3000} — sign in as owner@example.com / demo-password"
  export POSTHORN_ALLOW_PRIVATE_TARGETS="${POSTHORN_ALLOW_PRIVATE_TARGETS:-true}"
  exec "$POSTHORN_BIN" serve
}

ensure_test_tools() {
  [ -x /usr/bin/chromium ] || apt_install chromium
  # Prometheus scrapes a server in a test; promtool tests the alerting rules.
  command -v promtool >/dev/null && [ -x /usr/bin/prometheus ] || apt_install prometheus
  # The broker destinations' tests start private Redis, NATS, Mosquitto and RabbitMQ
  # servers of their own.
  command -v redis-server >/dev/null || apt_install redis-server
  command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || apt_install nats-server
  [ -x /usr/sbin/mosquitto ] || apt_install mosquitto
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || apt_install rabbitmq-server
  command -v python3 >/dev/null || apt_install python3 python3-venv
  if [ ! -x "$ROOT/.venv/bin/python" ]; then
    log "creating .venv for the receiver-side checks"
    python3 -m venv "$ROOT/.venv" || { apt_install python3-venv; python3 -m venv "$ROOT/.venv"; }
  fi
  "$ROOT/.venv/bin/python" -c "import standardwebhooks, requests, schemathesis, aiosmtpd, cryptography, redis, nats, paho.mqtt, pika" 2>/dev/null \
    || "$ROOT/.venv/bin/pip" install -q -r end2end/requirements.txt
  if [ ! -d end2end/node_modules/@playwright/test ] || [ ! -d end2end/node_modules/@axe-core/playwright ]; then
    log "installing Playwright (npm ci)"
    (cd end2end && npm ci --no-audit --no-fund)
  fi
}

# The Kubernetes test's tools: buildah builds the images, podman (with runc: crun fails
# in this sandbox) plays them, and Debian's kubectl 1.20 renders the manifests. Where
# another package owns /usr/bin/kubectl, Debian's is unpacked under .tools instead.
ensure_container_tools() {
  command -v buildah >/dev/null && command -v podman >/dev/null && command -v runc >/dev/null \
    || apt_install buildah podman runc
  command -v kubectl >/dev/null || apt_install kubernetes-client
  kubectl version --client 2>/dev/null | grep -q 'v1\.20\.' && return
  local kc="$ROOT/.tools/kubernetes-client"
  if [ ! -x "$kc/usr/bin/kubectl" ]; then
    log "unpacking Debian's kubernetes-client (kubectl 1.20) into .tools"
    local deb; deb="$(mktemp -d)"
    (cd "$deb" && { apt-get download kubernetes-client >/dev/null 2>&1 \
      || { as_root apt-get update >/dev/null && apt-get download kubernetes-client >/dev/null 2>&1; }; })
    mkdir -p "$kc" && dpkg-deb -x "$deb"/kubernetes-client_*.deb "$kc" && rm -rf "$deb"
  fi
  export POSTHORN_KUBECTL="$kc/usr/bin/kubectl"
}

# Tests use DATABASE_URL, else the machine's PostgreSQL on 5432 if one answers, else the
# private cluster (installed and created on first use).
ensure_test_database() {
  if [ -z "${DATABASE_URL:-}" ] && command -v psql >/dev/null \
     && psql "postgres://postgres@127.0.0.1:5432/postgres" -tAc 'SELECT 1' >/dev/null 2>&1; then
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
  fi
  ensure_database
}

test_all() {
  check_docs
  ensure_test_tools
  build
  ensure_test_database
  export POSTHORN_TEST_DATABASE_URL="$DATABASE_URL"
  export POSTHORN_PYTHON="$ROOT/.venv/bin/python"
  export POSTHORN_PSQL="$(command -v psql || echo "$(pg_bin)/psql")"
  # Databases left by earlier runs of the integration tests.
  "$POSTHORN_PSQL" "$DATABASE_URL" -tAc "SELECT datname FROM pg_database WHERE datname LIKE 'ph_test_%'" 2>/dev/null \
    | while read -r db; do "$POSTHORN_PSQL" "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; done
  log "alerting rules (promtool test rules deploy/prometheus/posthorn.rules.test.yml)"
  (cd deploy/prometheus && promtool check rules posthorn.rules.yml && promtool test rules posthorn.rules.test.yml)
  log "unit and integration tests"
  cargo test -p app --features ssr --lib
  cargo test -p server
  # After the tests: prepare touches app's and server's sources, which would rebuild them.
  sqlx_prepare --check
  log "failover: the PostgreSQL leader and then a server killed under load (deploy/local-cluster.sh)"
  "$ROOT/.venv/bin/python" deploy/test_failover.py
  log "Kubernetes: both overlays rendered and checked, the demo played with podman (deploy/test_kube.py)"
  ensure_container_tools
  "$ROOT/.venv/bin/python" deploy/test_kube.py
  log "client libraries (Python, TypeScript, PHP, Go, Ruby; posthorn listen) against a running server"
  bash sdk/test.sh
  log "end-to-end tests (Playwright, Chromium)"
  (cd end2end && npx playwright test)
  log "every test passed"
}

# The deliveries page's first load on slow 4G, cold and warm (figures in BENCHMARKS.md).
bench_first_load() {
  ensure_test_tools
  build
  ensure_test_database
  export POSTHORN_TEST_DATABASE_URL="$DATABASE_URL"
  export POSTHORN_PSQL="$(command -v psql || echo "$(pg_bin)/psql")"
  export POSTHORN_FIRST_LOAD_RUNS="${POSTHORN_FIRST_LOAD_RUNS:-3}"
  (cd end2end && npx playwright test first-load)
}

case "${1:-}" in
  tools) ensure_rust_tools; ensure_sqlx_cli; ensure_test_tools; ensure_book_tools ;;
  build) build ;;
  pg) ensure_private_pg; echo "DATABASE_URL=$DATABASE_URL" ;;
  docs) check_docs ;;
  sqlx) ensure_test_database; sqlx_prepare ;;
  run) run ;;
  test) test_all ;;
  first-load) bench_first_load ;;
  *) echo "usage: .ci/dev.sh run|test|build|tools|pg|docs|sqlx|first-load" >&2; exit 2 ;;
esac
