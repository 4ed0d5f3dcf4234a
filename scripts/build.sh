#!/usr/bin/env bash
# Builds the canisters in release mode into target/canisters/ and checks them: the
# wasm32-wasip1 canisters are converted for the IC (wasi2ic's conversion, by
# canisters/wasi-rewire: their WASI imports rewired to ic-wasi-polyfill's functions), and every
# canister must import nothing
# but ic0. The store canisters are the registry's (canisters/engines.toml). (The committed
# .did files are checked against the code by each canister's native test, the project's one
# Candid check.) Installs what it lacks (the toolchain's Wasm targets). Prints the Wasm sizes.
#
# Usage: scripts/build.sh [CANISTER...]
#        (default: every store canister of the registry and the client)
# `client` is the example canister that calls a store canister (canisters/client).
# `benches` is the canbench benchmark canister (its Candid is canbench's, not checked here);
# `ic-sqlite-vfs-benches` the ic-sqlite-vfs peer's (its crate with the feature `canbench`).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools

OUT="$ROOT/target/canisters"
mkdir -p "$OUT"
RUSTFLAGS="$(wasm_rustflags)"
export RUSTFLAGS

# build CANISTER PACKAGE TARGET WASI2IC MANIFEST [FEATURES]: a release build of PACKAGE (with
# FEATURES) for TARGET with MANIFEST (relative to the repository), locked to its Cargo.lock, in
# the workspace's target directory (a peer workspace: in its own, below), copied (or converted
# by wasi-rewire) to target/canisters/CANISTER.wasm.
# A canister that is a workspace of its own (the ic-sqlite-vfs peer) reaches this crate as a
# path dependency outside its workspace, and cargo hashes such a dependency's absolute path into
# every symbol, which moves the Wasm's data and its instruction counts with the checkout. So
# it is built through one fixed path, a link to the checkout, the same on every machine.
# Its flags (the path remapping) differ from the other canisters', and cargo does not keep
# one build of a dependency per set of flags: in one target directory, each build would
# recompile the dependencies the other overwrote. So it has a target directory of its own.
FIXED_ROOT=/tmp/userstore-checkout

build() {
  local canister=$1 package=$2 target=$3 wasi2ic=$4 manifest=$5 features=${6:-}
  local root=$ROOT flags=$RUSTFLAGS target_dir=$ROOT/target
  if [ "$manifest" != Cargo.toml ]; then
    ln -sfn "$ROOT" "$FIXED_ROOT"
    root=$FIXED_ROOT
    flags="$flags --remap-path-prefix=$FIXED_ROOT=/userstore"
    target_dir=$ROOT/target/peer-canisters
  fi
  log "building $canister ($package, $target, release)"
  RUSTFLAGS="$flags" cargo build --manifest-path "$root/$manifest" --target-dir "$target_dir" --release --locked \
    --target "$target" -p "$package" ${features:+--features "$features"}
  local built="$target_dir/$target/release/${package//-/_}.wasm"
  if [ "$wasi2ic" = 1 ]; then
    "$REWIRE" "$built" "$OUT/$canister.wasm" >/dev/null
  else
    cp "$built" "$OUT/$canister.wasm"
  fi
}

# The conversion of the wasm32-wasip1 canisters, a native tool of the workspace (built without
# the canisters' flags, which are for Wasm). WASI_REWIRE names a build of it made just before
# with the whole workspace (setup.sh's build_workspace, which says why).
if [ -n "${WASI_REWIRE:-}" ]; then
  REWIRE=$WASI_REWIRE
  [ -x "$REWIRE" ] || { echo "WASI_REWIRE=$REWIRE: no such program" >&2; exit 1; }
else
  REWIRE="$ROOT/target/debug/wasi-rewire"
  env -u RUSTFLAGS cargo build --manifest-path "$ROOT/Cargo.toml" --target-dir "$ROOT/target" --locked \
    --quiet -p wasi-rewire
fi

# The store canisters, one line each: canister package target wasi2ic.
registry=$(python3 "$ROOT/scripts/registry.py" canisters)
known="$registry
client client-canister wasm32-unknown-unknown 0 Cargo.toml
benches userstore-benches wasm32-wasip1 1 Cargo.toml
ic-sqlite-vfs-benches ic-sqlite-vfs-canister wasm32-unknown-unknown 0 canisters/ic-sqlite-vfs/Cargo.toml canbench"

canisters=("$@")
if [ ${#canisters[@]} -eq 0 ]; then
  while read -r canister _; do canisters+=("$canister"); done <<<"$registry"
  canisters+=(client)
fi
for canister in "${canisters[@]}"; do
  line=$(awk -v name="$canister" '$1 == name' <<<"$known")
  if [ -z "$line" ]; then
    echo "unknown canister '$canister' (the registry's, client, benches or ic-sqlite-vfs-benches)" >&2
    exit 2
  fi
  # shellcheck disable=SC2086
  build $line
  log "checking $canister: imports"
  python3 "$ROOT/scripts/wasm_imports.py" --only ic0 "$OUT/$canister.wasm"
done

log "canister Wasm"
for canister in "${canisters[@]}"; do
  printf '%-16s %10d bytes  %s\n' "$canister" "$(file_size "$OUT/$canister.wasm")" \
    "target/canisters/$canister.wasm"
done
