# Shared set-up for the project's scripts (sourced, not run): the pinned toolchain with its
# Wasm targets, the cargo-installed tools at pinned versions, and the report's Python YAML
# library. Installs only what is missing. Portable to Linux and macOS (bash 3.2).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export PATH="$HOME/.cargo/bin:$PATH"

# Tool versions, pinned so a fresh machine builds the same Wasm as the committed results.
CANBENCH_VERSION="0.7.0"
PYYAML_VERSION="6.0.3"
# The edge host: wasmtime-cli at the version of the runner's wasmtime crate (Cargo.lock).
WASMTIME_VERSION="48.0.8"
# Only what `wasmtime serve` needs, and its compilation cache (a host restarted by the kill
# tests loads the compiled component instead of compiling it again); it serves components
# exactly as the default build does.
WASMTIME_FEATURES="serve,run,component-model-async,cranelift,parallel-compilation,pooling-allocator,cache"

# Each step's line carries the wall-clock time, so that a log (CI's above all) shows where the
# time goes.
log() { printf '\n== %s  [%s]\n' "$*" "$(date +%H:%M:%S)" >&2; }

# require COMMAND WHY...: fail early, with a clear message, when a prerequisite is missing.
require() {
  local command=$1
  shift
  if ! command -v "$command" >/dev/null; then
    echo "missing '$command': $*" >&2
    return 1
  fi
}

ensure_toolchain() {
  require rustup "install it from https://rustup.rs"
  require python3 "the scripts use it to check Wasm imports and write the report"
  require cc "a C compiler builds SQLite for the native tests"
  # The channel named by rust-toolchain.toml, with its components and both Wasm targets;
  # installing them again is a no-op.
  local channel
  channel=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$ROOT/rust-toolchain.toml")
  rustup toolchain install "$channel" --profile minimal -c rustfmt -c clippy \
    -t wasm32-unknown-unknown -t wasm32-wasip1 -t wasm32-wasip2 >/dev/null
}

# ensure_cargo_tool BINARY CRATE VERSION
ensure_cargo_tool() {
  local binary=$1 crate=$2 version=$3
  if command -v "$binary" >/dev/null && cargo install --list | grep -q "^$crate v$version:"; then
    return 0
  fi
  log "installing $crate $version (cargo install --locked)"
  (cd "$ROOT" && cargo install --locked "$crate" --version "$version")
}

# The canisters' build needs only the toolchain: their conversion for the IC is the
# workspace's own wasi-rewire (scripts/build.sh).
ensure_build_tools() {
  ensure_toolchain
}

# cargo_linted ARGS...: cargo with clippy compiling the workspace's own crates, as `cargo
# clippy -- -D warnings` does (clippy-driver as RUSTC_WORKSPACE_WRAPPER, its arguments in
# CLIPPY_ARGS), but in a full build: one compilation lints the crates and makes the tests and
# the tools, where `cargo clippy` and `cargo test` compile everything twice (a check and a
# build). Dependencies are compiled by rustc as usual. Native builds only: clippy turns MIR
# optimizations off, which would change the canisters' Wasm (scripts/build.sh uses cargo).
cargo_linted() {
  local driver
  driver=$(cd "$ROOT" && rustup which clippy-driver)
  RUSTC_WORKSPACE_WRAPPER="$driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" \
    cargo "$@"
}

# build_workspace: the whole workspace with its tests, linted (cargo_linted), as scripts/test.sh
# and scripts/bench.sh both build it: the tests, the tools, wasmtime-serve, wasi-rewire. Sets
# WASI_REWIRE, scripts/build.sh's Wasm conversion, to this build's. Cargo resolves features
# for the packages one command selects: a tool built alone (`-p icrun-cli`, `-p wasi-rewire`)
# leaves out features the tests' dependencies turn on (rustix's, tokio's, ...), so wasmtime or
# the tool's dependencies would be compiled a second time (minutes of CI). The whole workspace
# gives the tests' resolution: one compilation for the tests and every tool.
build_workspace() {
  # shellcheck disable=SC2046 # workspace_features prints whole words
  cargo_linted build --workspace --all-targets --locked $(workspace_features)
  export WASI_REWIRE="$ROOT/target/debug/wasi-rewire"
}

# use_workspace_wasmtime: the tests' and CI's `wasmtime serve`, the workspace's build of it
# (benches/wasmtime-serve, built by cargo_linted), unless WASMTIME_BIN names another.
use_workspace_wasmtime() {
  export WASMTIME_BIN="${WASMTIME_BIN:-$ROOT/target/debug/wasmtime-serve}"
}

# workspace_features: the features a build of the whole workspace names, one word a line: the
# end-to-end tests' PocketIC backend where PocketIC runs (POCKET_IC_BIN set), which
# tests/Cargo.toml keeps out of the other builds (its HTTP client is minutes of build).
workspace_features() {
  if [ -n "${POCKET_IC_BIN:-}" ]; then
    printf '%s\n' --features userstore-e2e/pocket-ic
  fi
}

# ensure_edge_host: wasmtime-cli (`wasmtime serve`, the edge host of the tests and the edge
# benchmark), from crates.io.
ensure_edge_host() {
  if command -v wasmtime >/dev/null && cargo install --list | grep -q "^wasmtime-cli v$WASMTIME_VERSION:"; then
    return 0
  fi
  log "installing wasmtime-cli $WASMTIME_VERSION (cargo install --locked, features $WASMTIME_FEATURES; 5 to 13 minutes on a 2-core machine)"
  (cd "$ROOT" && cargo install --locked wasmtime-cli --version "$WASMTIME_VERSION" \
    --no-default-features --features "$WASMTIME_FEATURES")
}

# The report generator reads canbench's YAML with PyYAML.
ensure_python_yaml() {
  if python3 -c 'import yaml' 2>/dev/null; then
    return 0
  fi
  log "installing PyYAML $PYYAML_VERSION (pip --user)"
  python3 -m pip install --user --quiet "PyYAML==$PYYAML_VERSION"
}

# sha256 FILE: the file's SHA-256 in hex (sha256sum on Linux, shasum on macOS).
sha256() {
  if command -v sha256sum >/dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# file_size FILE: its size in bytes (portable: no stat flags).
file_size() {
  wc -c <"$1" | tr -d ' '
}

# Build paths are remapped so the Wasm does not depend on where the checkout or the cargo
# home is: committed instruction counts must reproduce from any clone.
wasm_rustflags() {
  printf '%s' "--remap-path-prefix=$ROOT=/userstore --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
}
