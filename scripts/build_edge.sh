#!/usr/bin/env bash
# Builds the edge components (edge/, wasi:http/proxy components for `wasmtime serve`) in
# release mode for wasm32-wasip2 into target/edge:
#   userstore-edge.wasm         the page tree and the B-tree (no C in it)
#   userstore-edge-sqlite.wasm  the same with the stable-memory SQLite too (feature
#                               `stable-sqlite`: SQLite's C compiled by Debian's clang for WASI,
#                               scripts/setup_wasi_c.sh, which installs it when missing)
# Installs the target if it is missing. Run one with:
#   wasmtime serve -S cli --dir <data dir>::/data --env USERSTORE_WRITE_TOKEN=<token> \
#     --env USERSTORE_HOST_EPOCH=$(date +%s%N) [--env USERSTORE_ENGINE=btree] \
#     target/edge/userstore-edge.wasm
set -euo pipefail
source "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/setup_wasi_c.sh"
ensure_wasi_c

# The pinned toolchain with its targets, wasm32-wasip2 among them.
ensure_toolchain

OUT="$ROOT/target/edge"
mkdir -p "$OUT"
# The same flags as the peers' build (scripts/build_edge_peers.sh), so that the two share
# their dependencies' builds instead of rebuilding them for each other.
flags="$(wasm_rustflags) -L native=$WASI_C_LIBS"
build() {
  local name=$1
  shift
  log "building $name (wasm32-wasip2, release${*:+, $*})"
  RUSTFLAGS="$flags" cargo build --manifest-path "$ROOT/Cargo.toml" --release --locked \
    --target wasm32-wasip2 -p userstore-edge "$@"
  cp "$ROOT/target/wasm32-wasip2/release/userstore_edge.wasm" "$OUT/$name.wasm"
  ls -l "$OUT/$name.wasm" >&2
}
build userstore-edge
build userstore-edge-sqlite --features stable-sqlite
