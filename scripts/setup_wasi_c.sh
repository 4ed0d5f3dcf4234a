# C for wasm32-wasip2 (sourced, not run): what the edge peer over SQLite
# (edge/peers/sqlite-file, rusqlite's bundled SQLite) needs to compile its C for the
# component, from Debian packages alone (no wasi-sdk download):
#   clang, lld, llvm (llvm-ar) and wasi-libc (headers and libraries for wasm32-wasi).
# Installs them with apt-get when missing and root (CI: Debian bookworm), then exports the
# cc crate's settings for the target:
#   CC_wasm32_wasip2   scripts/wasi-clang (clang 14 with the target spelled wasm32-wasi)
#   AR_wasm32_wasip2   llvm-ar (GNU ar writes no symbol index wasm-ld can read)
#   WASI_C_LIBS        a directory with wasi-libc's emulation libraries, which SQLite's
#                      WASI build calls (libsqlite3-sys defines _WASI_EMULATED_*), for
#                      `-L native=$WASI_C_LIBS` in the component's RUSTFLAGS (not the whole
#                      of /usr/lib/wasm32-wasi: its libc.a must not replace Rust's).
# Usage: source scripts/setup_wasi_c.sh; ensure_wasi_c

ensure_wasi_c() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local missing=()
  command -v clang >/dev/null || missing+=(clang)
  command -v wasm-ld >/dev/null || missing+=(lld)
  command -v llvm-ar >/dev/null || missing+=(llvm)
  [ -f /usr/lib/wasm32-wasi/libc.a ] || missing+=(wasi-libc)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
      echo "missing ${missing[*]}: install them (Debian: apt-get install clang lld llvm wasi-libc)" >&2
      return 1
    fi
    printf '\n== apt-get install %s\n' "${missing[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang lld llvm wasi-libc >&2
  fi
  export CC_wasm32_wasip2="$root/scripts/wasi-clang"
  export AR_wasm32_wasip2="llvm-ar"
  WASI_C_LIBS="$root/target/wasi-c/lib"
  mkdir -p "$WASI_C_LIBS"
  cp /usr/lib/wasm32-wasi/libwasi-emulated-*.a "$WASI_C_LIBS/"
  export WASI_C_LIBS
}
