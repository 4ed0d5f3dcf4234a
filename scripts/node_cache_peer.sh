#!/usr/bin/env bash
# The ic-stable-structures node cache as a peer (docs/node-cache.md): the B-tree canister
# built against ic-stable-structures' main branch at one pinned commit, where the node cache
# is merged but not released (0.7.2 on crates.io has none), measured by bench-calls exactly
# as the B-tree is, at several cache sizes: 0 (the cache off, the control), 16 (the default
# its documentation recommends) and larger ones.
#
# Benchmark only: the library never depends on it, and the build happens in a copy of the
# project under target/node-cache, never in the work tree. It needs a clone of
# dfinity/stable-structures, which CI cannot fetch (no network but the package registries),
# so it runs outside scripts/bench.sh; its figures and this command go to docs/node-cache.md.
#
# Usage: scripts/node_cache_peer.sh <clone of dfinity/stable-structures, or its git dir> [slots ...]
#        (after scripts/bench.sh, whose per_call_results.yml it compares against)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools
ensure_python_yaml

# ic-stable-structures main, 2026-05-12: the node cache of #426 (2026-04-07) and its tests.
PIN=b5d1650463f477affb3d358e86b1113953fc9937

if [ $# -lt 1 ]; then
  echo "usage: scripts/node_cache_peer.sh <stable-structures git dir> [slots ...]" >&2
  exit 2
fi
git_dir=$1
shift
# A clone's work tree or its git directory (a bare mirror).
if [ -d "$git_dir/.git" ]; then
  git_dir="$git_dir/.git"
fi
slots=("$@")
[ ${#slots[@]} -gt 0 ] || slots=(0 16 32 128)

work="$ROOT/target/node-cache"
rm -rf "$work/src"
mkdir -p "$work/src/stable-structures" "$work/src/userstore"
log "ic-stable-structures at $PIN"
git --git-dir="$git_dir" archive "$PIN" | tar -x -C "$work/src/stable-structures"
log "this project at $(git -C "$ROOT" rev-parse --short HEAD), patched to use it"
git -C "$ROOT" archive HEAD | tar -x -C "$work/src/userstore"
cat >>"$work/src/userstore/Cargo.toml" <<EOF

# Written by scripts/node_cache_peer.sh in its copy of the project: benchmark only.
[patch.crates-io]
ic-stable-structures = { path = "../stable-structures" }
EOF

cargo build --locked --manifest-path "$ROOT/Cargo.toml" -p bench-calls

btree="$work/src/userstore/src/btree.rs"
# The one place the B-tree opens its map; each size's build adds the cache there, to a copy
# of the file as the project has it.
open_map='StableBTreeMap::init(memory)'
[ "$(grep -cF "$open_map" "$btree")" = 1 ] || {
  echo "src/btree.rs no longer opens its map with exactly one $open_map" >&2
  exit 1
}
cp "$btree" "$btree.orig"
results=()
for n in "${slots[@]}"; do
  log "B-tree canister with a node cache of $n slots"
  sed "s/$open_map/&.with_node_cache($n)/" "$btree.orig" >"$btree"
  RUSTFLAGS="$(wasm_rustflags)" cargo build --manifest-path "$work/src/userstore/Cargo.toml" \
    --target-dir "$work/target" --release --target wasm32-unknown-unknown -p btree-canister
  mkdir -p "$work/slots-$n"
  cp "$work/target/wasm32-unknown-unknown/release/btree_canister.wasm" "$work/slots-$n/btree.wasm"
  python3 "$ROOT/scripts/wasm_imports.py" --only ic0 "$work/slots-$n/btree.wasm"
  log "measuring it (bench-calls --only btree)"
  "$ROOT/target/debug/bench-calls" --only btree "$work/slots-$n" "$work/slots-$n.yml" \
    "$work/slots-$n/flamegraphs"
  results+=("$n=$work/slots-$n.yml")
done
mv "$btree.orig" "$btree"

log "docs/node-cache.md"
python3 "$ROOT/scripts/report_node_cache.py" "$ROOT/per_call_results.yml" "$PIN" \
  "${results[@]}" >"$ROOT/docs/node-cache.md"
cat "$ROOT/docs/node-cache.md"
