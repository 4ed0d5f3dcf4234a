//! The edge benchmark's parts that the end-to-end tests share: an HTTP client ([`client`])
//! and the real host, `wasmtime serve`, started and killed ([`host`]).

pub mod client;
pub mod host;
