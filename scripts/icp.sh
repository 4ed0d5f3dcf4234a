#!/usr/bin/env bash
# icp-cli (dfx's successor, `icp.yaml`), installed locally under target/icp-cli at a pinned
# version from npm (the Linux x64 binary package, @icp-sdk/icp-cli-linux-x64). Sourced, it
# defines ensure_icp and icp_build_check; run, it installs icp-cli and prints its path.
#
# icp_build_check runs `icp build` (every canister of icp.yaml: script steps that call
# scripts/build.sh) and fails unless each Wasm icp-cli stored (.icp/cache/artifacts/<name>)
# is byte for byte the one scripts/build.sh wrote (target/canisters/<name>.wasm). `icp build`
# works offline; `icp network start` does not here (its network launcher is a download), so
# no deploy with icp-cli runs on this machine.
ICP_CLI_VERSION="1.5.0"

# ensure_icp: node and npm must be installed; unpacks the binary package into target/icp-cli
# when it is missing or at another version.
ensure_icp() {
  local root prefix
  root="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  prefix="$root/target/icp-cli"
  command -v npm >/dev/null || { echo "missing 'npm': install Node.js 20 or newer" >&2; return 1; }
  if [ -x "$prefix/package/bin/icp" ] &&
    "$prefix/package/bin/icp" --version 2>/dev/null | grep -qx "icp $ICP_CLI_VERSION"; then
    return 0
  fi
  printf '\n== %s\n' "installing icp-cli $ICP_CLI_VERSION (@icp-sdk/icp-cli-linux-x64) into $prefix" >&2
  rm -rf "$prefix" && mkdir -p "$prefix"
  (cd "$prefix" && npm pack --silent "@icp-sdk/icp-cli-linux-x64@$ICP_CLI_VERSION" >/dev/null &&
    tar xzf icp-sdk-icp-cli-linux-x64-"$ICP_CLI_VERSION".tgz)
  "$prefix/package/bin/icp" --version >&2
}

# icp_build_check: `icp build` of every canister in icp.yaml, each Wasm compared with the
# one scripts/build.sh wrote before (target/canisters/<name>.wasm, which must exist): the
# same bytes, although icp-cli ran the build again, in its own environment.
icp_build_check() {
  local root icp name built expected
  root="${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  icp="$root/target/icp-cli/package/bin/icp"
  local -A before=()
  for name in $(sed -n 's/^  - name: //p' "$root/icp.yaml"); do
    expected="$root/target/canisters/$name.wasm"
    [ -f "$expected" ] || { echo "icp build check: build $expected first (scripts/build.sh $name)" >&2; return 1; }
    before[$name]=$(sha256sum "$expected" | cut -d' ' -f1)
  done
  # No telemetry: CI wants none, and this machine has no network for it.
  (cd "$root" && DO_NOT_TRACK=1 "$icp" build) >&2
  for name in "${!before[@]}"; do
    built="$root/.icp/cache/artifacts/$name"
    if [ "$(sha256sum "$built" | cut -d' ' -f1)" != "${before[$name]}" ]; then
      echo "icp build: $name's Wasm ($built) is not the one scripts/build.sh built before" >&2
      return 1
    fi
    echo "icp build: $name, the same Wasm as scripts/build.sh (sha256 ${before[$name]:0:16})" >&2
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  ensure_icp
  echo "$(cd "$(dirname "$0")/.." && pwd)/target/icp-cli/package/bin/icp"
fi
