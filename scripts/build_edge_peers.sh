#!/usr/bin/env bash
# Builds the edge peers' components (edge/peers: redb, SQLite on a file) in release mode for
# wasm32-wasip2 into target/edge/userstore-redb.wasm and target/edge/userstore-sqlite-file.wasm,
# with SQLite's C compiled by Debian's clang and wasi-libc (scripts/setup_wasi_c.sh, which
# installs them with apt-get when missing). Run one like the edge component:
#   wasmtime serve -S cli --dir <data dir>::/data --env USERSTORE_WRITE_TOKEN=<token> \
#     --env USERSTORE_HOST_EPOCH=$(date +%s%N) [--env USERSTORE_SQLITE_JOURNAL_MODE=wal] \
#     target/edge/userstore-sqlite-file.wasm
set -euo pipefail
source "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/setup_wasi_c.sh"
ensure_wasi_c

# The pinned toolchain with its targets, wasm32-wasip2 among them.
ensure_toolchain

OUT="$ROOT/target/edge"
mkdir -p "$OUT"
for peer in redb sqlite-file; do
  log "building userstore-$peer-component (wasm32-wasip2, release)"
  RUSTFLAGS="$(wasm_rustflags) -L native=$WASI_C_LIBS" cargo build \
    --manifest-path "$ROOT/edge/peers/Cargo.toml" --target-dir "$ROOT/target" --release --locked \
    --target wasm32-wasip2 -p "userstore-$peer-component"
  cp "$ROOT/target/wasm32-wasip2/release/userstore_${peer//-/_}_component.wasm" \
    "$OUT/userstore-$peer.wasm"
  ls -l "$OUT/userstore-$peer.wasm" >&2
done
