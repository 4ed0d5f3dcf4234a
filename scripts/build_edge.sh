#!/usr/bin/env bash
# Builds the edge component (edge/, a wasi:http/proxy component for `wasmtime serve`) in
# release mode for wasm32-wasip2 into target/edge/userstore-edge.wasm. Installs the target if
# it is missing. Run it with:
#   wasmtime serve -S cli --dir <data dir>::/data --env USERSTORE_WRITE_TOKEN=<token> \
#     --env USERSTORE_HOST_EPOCH=$(date +%s%N) target/edge/userstore-edge.wasm
set -euo pipefail
source "$(dirname "$0")/setup.sh"

# The pinned toolchain with its targets, wasm32-wasip2 among them.
ensure_toolchain

OUT="$ROOT/target/edge"
mkdir -p "$OUT"
log "building userstore-edge (wasm32-wasip2, release)"
RUSTFLAGS="$(wasm_rustflags)" cargo build --manifest-path "$ROOT/Cargo.toml" --release --locked \
  --target wasm32-wasip2 -p userstore-edge
cp "$ROOT/target/wasm32-wasip2/release/userstore_edge.wasm" "$OUT/userstore-edge.wasm"
ls -l "$OUT/userstore-edge.wasm" >&2
