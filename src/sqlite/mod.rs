//! [`SqliteStore`]: the user table in SQLite ([`crate::sqlite_shared::SqlTable`]) on a
//! database file.
//!
//! Natively the connection is a file or an in-memory database (bundled SQLite); inside a
//! canister (wasm32-wasip1) the database file lives on stable memory through
//! ic-wasi-polyfill (see `stable_memory`), with its journals on the polyfill's file system.
//! The SQL is the same in both.

mod engine;
#[cfg(target_os = "wasi")]
pub mod stable_memory;
mod store;

pub use store::SqliteStore;
