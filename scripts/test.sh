#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (native and Wasm targets), the canister
# build with its import check, icp-cli's build of icp.yaml (the same Wasm), the report
# generator's tests, then the workspace's tests
# (the committed .did files are checked there, by each canister's test). Sets itself up on
# a fresh machine (toolchain, Wasm targets, jco, icp-cli, PyYAML). Clippy lints the native
# crates while they are built for the tests (cargo_linted, scripts/setup.sh): one compilation,
# not a check and a build. The edge tests' `wasmtime serve` is the workspace's own build of it
# (benches/wasmtime-serve), which shares the runner's wasmtime: no second wasmtime build.
#
# The fast path, without any Wasm: `cargo test -p userstore` (the library's
# property and engine tests) and `cargo test -p icrun` (the runtime's metering rules).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools
ensure_python_yaml
# The second edge host of tests/edge_jco.rs: jco serve, under target/jco.
source "$(dirname "$0")/jco.sh"
ensure_jco
# dfx's successor, icp-cli, whose `icp build` must give the canisters scripts/build.sh gives.
source "$(dirname "$0")/icp.sh"
ensure_icp
cd "$ROOT"

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo build (workspace, all targets), linted by clippy: the tests, the tools, wasmtime-serve"
build_workspace
# The edge tests' host (tests/edge.rs, HostConfig::wasmtime_binary), unless one is given.
use_workspace_wasmtime

# Registry canisters that are workspaces of their own (the ic-sqlite-vfs peer): formatting,
# clippy and their native tests (the committed Candid), linted as they are built. Their
# native builds have a target directory of their own (PEERS_TARGET): the crates they share
# with this workspace (userstore, userstore-benches) are dependencies there, compiled by rustc,
# and members here, compiled by clippy (cargo_linted); in one directory each build would
# overwrite the other's, and a test binary could link two builds of one crate.
PEERS_TARGET="$ROOT/target/peers"
while read -r canister _ _ _ manifest; do
  [ "$manifest" = Cargo.toml ] && continue
  log "$canister ($manifest): fmt, clippy, tests"
  cargo fmt --manifest-path "$ROOT/$manifest" -- --check
  # With every feature: the ic-sqlite-vfs peer's `canbench` (its bench canister) included.
  cargo_linted build --manifest-path "$ROOT/$manifest" --target-dir "$PEERS_TARGET" --all-targets \
    --all-features --locked
  cargo_linted test --manifest-path "$ROOT/$manifest" --target-dir "$PEERS_TARGET" --locked
  cargo_linted test --manifest-path "$ROOT/$manifest" --target-dir "$PEERS_TARGET" --all-features \
    --locked
done < <(python3 "$ROOT/scripts/registry.py" canisters)

# The edge peers (edge/peers: redb, SQLite on a file), a workspace of their own: formatting,
# clippy and their native tests (the model and error-case conformance tests), then their
# components for wasm32-wasip2 (SQLite's C through scripts/setup_wasi_c.sh, apt on Debian).
log "edge peers (edge/peers/Cargo.toml): fmt, clippy, tests, components"
cargo fmt --manifest-path "$ROOT/edge/peers/Cargo.toml" -p userstore-peer-common -p userstore-redb -p userstore-redb-component -p userstore-sqlite-file -p userstore-sqlite-file-component -- --check
cargo_linted build --manifest-path "$ROOT/edge/peers/Cargo.toml" --target-dir "$PEERS_TARGET" \
  --all-targets --locked
cargo_linted test --manifest-path "$ROOT/edge/peers/Cargo.toml" --target-dir "$PEERS_TARGET" \
  --locked
"$ROOT/scripts/build_edge_peers.sh"

log "cargo clippy (canisters for their Wasm targets)"
# The registry's store canisters, each for its own target, with the client and the benchmark
# canister. One clippy run per canister: packages built together share their dependencies'
# features, which a canister built alone does not.
while read -r _ package target _ manifest features; do
  RUSTFLAGS="$(wasm_rustflags)" cargo clippy --manifest-path "$ROOT/$manifest" \
    --target-dir "$ROOT/target" --release --locked --target "$target" -p "$package" \
    ${features:+--features "$features"} -- -D warnings
done < <(python3 "$ROOT/scripts/registry.py" canisters
         echo "client client-canister wasm32-unknown-unknown 0 Cargo.toml"
         echo "benches userstore-benches wasm32-wasip1 1 Cargo.toml"
         echo "ic-sqlite-vfs-benches ic-sqlite-vfs-canister wasm32-unknown-unknown 0 canisters/ic-sqlite-vfs/Cargo.toml canbench")

log "building the canisters (imports checked)"
store_canisters=()
while read -r canister _; do
  store_canisters+=("$canister")
done < <(python3 "$ROOT/scripts/registry.py" canisters)
"$ROOT/scripts/build.sh" "${store_canisters[@]}" client benches

log "icp build (icp-cli $ICP_CLI_VERSION, icp.yaml): the same Wasm as scripts/build.sh"
icp_build_check

log "the edge components (wasm32-wasip2): clippy and build"
# tests/edge.rs runs target/edge/userstore-edge.wasm and userstore-edge-sqlite.wasm on
# `wasmtime serve` (WASMTIME_BIN, set above); it fails, saying so, when either is
# missing. The second has SQLite's C (scripts/setup_wasi_c.sh), with the build's flags.
source "$ROOT/scripts/setup_wasi_c.sh"
ensure_wasi_c
for features in "" stable-sqlite; do
  RUSTFLAGS="$(wasm_rustflags) -L native=$WASI_C_LIBS" cargo clippy --release --locked \
    --target wasm32-wasip2 -p userstore-edge ${features:+--features "$features"} -- -D warnings
done
"$ROOT/scripts/build_edge.sh"

log "report generator tests (python)"
python3 -m unittest discover -s "$ROOT/scripts" -p 'test_*.py'

if [ -n "${POCKET_IC_BIN:-}" ]; then
  log "cargo test (workspace); end-to-end tests on PocketIC ($POCKET_IC_BIN)"
else
  log "cargo test (workspace); end-to-end tests on icrun: PocketIC NOT used (POCKET_IC_BIN not set)"
fi
# Built above, with the same lints: this runs the tests (and compiles the doc tests).
# shellcheck disable=SC2046 # workspace_features prints whole words
cargo_linted test --workspace --locked $(workspace_features)
