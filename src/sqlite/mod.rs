//! [`SqliteStore`]: the user table in SQLite ([`crate::sqlite_shared::SqlTable`]) on a
//! database file.
//!
//! Natively the connection is a file or an in-memory database (bundled SQLite); inside a
//! canister (wasm32-wasip1) the database file lives on stable memory through
//! ic-wasi-polyfill (see `stable_memory`), with its journals on the polyfill's file system.
//! The SQL is the same in both.

// A canister's SQLite lives on the polyfill's file system, in wasm32-wasip1 (wasi2ic makes the
// canister); a component for an edge host has `StableSqliteStore` instead.
#[cfg(all(target_os = "wasi", not(target_env = "p1")))]
compile_error!(
    "SqliteStore (feature `sqlite`) is for wasm32-wasip1 canisters; on an edge host use \
     feature `stable-sqlite` (StableSqliteStore on a FileMemory)"
);

mod engine;
#[cfg(all(target_os = "wasi", target_env = "p1"))]
pub mod stable_memory;
mod store;

pub use store::SqliteStore;
