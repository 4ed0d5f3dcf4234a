//! The edge host layer: the user table ([`UserStore`](crate::store::UserStore)) served over
//! HTTP+JSON from a file, for the `wasi:http/proxy` component in `edge/` run by
//! `wasmtime serve`.
//!
//! It stands on the seam alone (`store`, `error`, `limits`, `user`), the engines and
//! `file_memory`; the canister layer (`service`, `settings`, `access`, `budget`, `layout`)
//! is no part of it. One request is one short-lived session ([`session`]):
//!
//! 1. [`api::parse`] turns the request into a [`api::Call`] (or a [`api::Failure`]: unknown
//!    route, wrong method, oversize or malformed body), and [`auth::authorize`] checks a
//!    write's bearer token, before any file is touched;
//! 2. [`lock::Lock`] takes the data file's lock file; a read on a `FileMemory` announces
//!    itself instead ([`readers`]) and reads beside the writer, whose checkpoints wait for
//!    the announced reads (the one write a reader must not meet);
//! 3. the data file is opened as a `FileMemory`, its first 64 KiB page holds the [`header`]
//!    that records which engine owns the data, and the engine gets the pages after it;
//! 4. [`api::execute`] runs the call; a successful write is committed (atomically, by the
//!    `FileMemory` log), everything else is rolled back, so a read never writes.
//!
//! The host's settings come from its environment ([`config`]). On WASI, `wasi_http` is the
//! `wasi:http/proxy` glue the components share: it reads the request and writes the response.

pub mod api;
pub mod auth;
pub mod config;
pub mod failure;
pub mod file;
pub mod header;
pub mod http;
pub mod lock;
pub mod readers;
pub mod route;
pub mod session;
#[cfg(target_os = "wasi")]
pub mod wasi_http;

#[cfg(test)]
mod tests;

pub use api::{handle, Call, Failure};
pub use config::{EdgeConfig, Engine};
pub use file::serve;
pub use http::{Request, Response};
pub use session::{serve_on, serve_store, uncounted, Access, Durable, Io};
