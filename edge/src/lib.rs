//! The user table over HTTP+JSON as a `wasi:http/proxy` component, for `wasmtime serve`.
//!
//! Everything but the WASI glue lives in the library's `edge` module (natively tested); this
//! crate only reads the incoming request, hands it to [`userstore::edge::serve`] and writes
//! the response. Built for `wasm32-wasip2` (`scripts/build_edge.sh`); natively it is empty.

#[cfg(target_os = "wasi")]
mod component;
