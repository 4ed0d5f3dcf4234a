#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (native and Wasm targets), the canister
# build with its import check, the report generator's tests, then the workspace's tests
# (the committed .did files are checked there, by each canister's test). Sets itself up on
# a fresh machine (toolchain, Wasm targets, wasi2ic, PyYAML).
#
# The fast path, without any Wasm or wasi2ic: `cargo test -p userstore` (the library's
# property and engine tests) and `cargo test -p icrun` (the runtime's metering rules).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools
ensure_python_yaml
cd "$ROOT"

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy (native, all targets)"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "cargo clippy (canisters for their Wasm targets)"
RUSTFLAGS="$(wasm_rustflags)" cargo clippy --release --locked --target wasm32-unknown-unknown \
  -p btree-canister -p client-canister -- -D warnings
RUSTFLAGS="$(wasm_rustflags)" cargo clippy --release --locked --target wasm32-wasip1 \
  -p sqlite-canister -p stable-sqlite-canister -p userstore-benches -- -D warnings

log "building the canisters (imports checked)"
"$ROOT/scripts/build.sh" btree sqlite stable-sqlite client benches

log "report generator tests (python)"
python3 -m unittest discover -s "$ROOT/scripts" -p 'test_*.py'

if [ -n "${POCKET_IC_BIN:-}" ]; then
  log "cargo test (workspace); end-to-end tests on PocketIC ($POCKET_IC_BIN)"
else
  log "cargo test (workspace); end-to-end tests on icrun: PocketIC NOT used (POCKET_IC_BIN not set)"
fi
cargo test --workspace --locked
