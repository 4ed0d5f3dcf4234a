//! The user table over HTTP+JSON as a `wasi:http/proxy` component, for `wasmtime serve`.
//!
//! Everything lives in the library's `edge` module (natively tested), the `wasi:http` glue
//! too (`userstore::edge::wasi_http`, shared with the peers' components); this crate only
//! exports the handler that hands each request to [`userstore::edge::serve`]. Built for `wasm32-wasip2` (`scripts/build_edge.sh`); natively it is empty.

#[cfg(target_os = "wasi")]
mod component;
