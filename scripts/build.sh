#!/usr/bin/env bash
# Builds the canisters in release mode into target/canisters/ and checks them: the two SQLite
# canisters are converted with wasi2ic, and every canister must import nothing but ic0. (The
# committed .did files are checked against the code by each canister's native test, the
# project's one Candid check.) Installs what it lacks (Wasm targets, wasi2ic). Prints the
# Wasm sizes and the Candid service.
#
# Usage: scripts/build.sh [btree] [sqlite] [stable-sqlite] [client] [benches]
#        (default: btree sqlite stable-sqlite client)
# `client` is the example canister that calls a store canister (canisters/client).
# `benches` is the canbench benchmark canister (its Candid is canbench's, not checked here).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools

OUT="$ROOT/target/canisters"
mkdir -p "$OUT"
RUSTFLAGS="$(wasm_rustflags)"
export RUSTFLAGS

# cargo_wasm TARGET PACKAGE: a release build of PACKAGE for TARGET, locked to Cargo.lock.
cargo_wasm() {
  cargo build --manifest-path "$ROOT/Cargo.toml" --release --locked --target "$1" -p "$2"
}

build_btree() {
  log "building the B-tree canister (wasm32-unknown-unknown, release)"
  cargo_wasm wasm32-unknown-unknown btree-canister
  cp "$ROOT/target/wasm32-unknown-unknown/release/btree_canister.wasm" "$OUT/btree.wasm"
}

build_client() {
  log "building the client canister (wasm32-unknown-unknown, release)"
  cargo_wasm wasm32-unknown-unknown client-canister
  cp "$ROOT/target/wasm32-unknown-unknown/release/client_canister.wasm" "$OUT/client.wasm"
}

build_sqlite() {
  log "building the SQLite canister (wasm32-wasip1, release) and converting it with wasi2ic"
  cargo_wasm wasm32-wasip1 sqlite-canister
  wasi2ic "$ROOT/target/wasm32-wasip1/release/sqlite_canister.wasm" "$OUT/sqlite.wasm" >/dev/null
}

build_stable_sqlite() {
  log "building the stable-memory SQLite canister (wasm32-wasip1, release) and converting it with wasi2ic"
  cargo_wasm wasm32-wasip1 stable-sqlite-canister
  wasi2ic "$ROOT/target/wasm32-wasip1/release/stable_sqlite_canister.wasm" "$OUT/stable-sqlite.wasm" >/dev/null
}

build_benches() {
  log "building the benchmark canister (wasm32-wasip1, release) and converting it with wasi2ic"
  cargo_wasm wasm32-wasip1 userstore-benches
  wasi2ic "$ROOT/target/wasm32-wasip1/release/userstore_benches.wasm" "$OUT/benches.wasm" >/dev/null
}

# check CANISTER: only ic0 imports.
check() {
  python3 "$ROOT/scripts/wasm_imports.py" --only ic0 "$OUT/$1.wasm"
}

canisters=("$@")
[ ${#canisters[@]} -gt 0 ] || canisters=(btree sqlite stable-sqlite client)
for canister in "${canisters[@]}"; do
  case "$canister" in
    btree) build_btree ;;
    sqlite) build_sqlite ;;
    stable-sqlite) build_stable_sqlite ;;
    client) build_client ;;
    benches) build_benches ;;
    *) echo "unknown canister '$canister' (btree, sqlite, stable-sqlite, client or benches)" >&2; exit 2 ;;
  esac
  log "checking $canister: imports"
  check "$canister"
done

log "canister Wasm"
for canister in "${canisters[@]}"; do
  printf '%-13s %10d bytes  %s\n' "$canister" "$(file_size "$OUT/$canister.wasm")" \
    "target/canisters/$canister.wasm"
done
first=${canisters[0]}
if [ "$first" = btree ] || [ "$first" = sqlite ]; then
  log "Candid service (identical for every store canister; types in canisters/*/*.did)"
  sed -n '/^service /,$p' "$ROOT/canisters/$first/$first.did"
fi
