#!/usr/bin/env bash
# The second edge host: `jco serve` (Node.js, @bytecodealliance/preview2-shim), installed
# locally under target/jco at pinned versions. Sourced, it defines ensure_jco; run, it
# installs them and prints the jco binary's path. tests/edge_jco.rs runs
#   target/jco/node_modules/.bin/jco serve --host 127.0.0.1 --port <port> \
#     --jco-import scripts/jco_hook.mjs target/edge/userstore-edge.wasm
# with JCO_DATA_DIR=<data dir> (preopened as /data by the hook) and the USERSTORE_* variables
# (the only environment the hook gives the component).
#
# Why the hook: preview2-shim's open-at refuses the descriptor flag mutate-directory
# ("unsupported", dist/nodejs/filesystem.js, `if (descriptorFlags.requestedWriteSync ||
# descriptorFlags.mutateDirectory) throw "unsupported"`), and wasi-libc's wasip2 openat (under
# Rust's std::fs) sets it on every open for writing (O_WRONLY/O_RDWR -> WRITE |
# MUTATE_DIRECTORY). The hook drops that flag on opens of non-directories, where it grants
# nothing; every other flag (create, exclusive, truncate, read, write) is passed as is.
JCO_VERSION="1.35.0"
PREVIEW2_SHIM_VERSION="0.26.1"

# ensure_jco: node and npm must be installed (Node 20 or newer); installs jco and the shim
# into target/jco when missing or at another version.
ensure_jco() {
  local root prefix
  root="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  prefix="$root/target/jco"
  command -v node >/dev/null || { echo "missing 'node': install Node.js 20 or newer" >&2; return 1; }
  command -v npm >/dev/null || { echo "missing 'npm': install Node.js 20 or newer" >&2; return 1; }
  if [ -x "$prefix/node_modules/.bin/jco" ] &&
    grep -q "\"version\": \"$JCO_VERSION\"" "$prefix/node_modules/@bytecodealliance/jco/package.json" 2>/dev/null &&
    grep -q "\"version\": \"$PREVIEW2_SHIM_VERSION\"" "$prefix/node_modules/@bytecodealliance/preview2-shim/package.json" 2>/dev/null; then
    return 0
  fi
  printf '\n== %s\n' "installing @bytecodealliance/jco $JCO_VERSION and preview2-shim $PREVIEW2_SHIM_VERSION into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --save-exact --no-audit --no-fund \
    "@bytecodealliance/jco@$JCO_VERSION" \
    "@bytecodealliance/preview2-shim@$PREVIEW2_SHIM_VERSION" >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  ensure_jco
  echo "$(cd "$(dirname "$0")/.." && pwd)/target/jco/node_modules/.bin/jco"
fi
