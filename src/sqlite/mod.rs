//! [`SqliteStore`]: the user table as one SQLite table,
//! `users(id INTEGER PRIMARY KEY, username TEXT NOT NULL)`.
//!
//! Natively the connection is a file or an in-memory database (bundled SQLite); inside a
//! canister (wasm32-wasip1) the database file lives on stable memory through
//! ic-wasi-polyfill (see `stable_memory`). The SQL is the same in both.
//!
//! [`SqliteConfig`] is always available; the store itself needs the `sqlite` feature (on by
//! default).

mod config;
#[cfg(feature = "sqlite")]
mod engine;
#[cfg(feature = "sqlite")]
mod pragmas;
#[cfg(all(feature = "sqlite", target_os = "wasi"))]
pub mod stable_memory;
#[cfg(feature = "sqlite")]
mod statements;
#[cfg(feature = "sqlite")]
mod store;

pub use config::{JournalMode, LockingMode, SqliteConfig, Synchronous};
#[cfg(feature = "sqlite")]
pub(crate) use store::RowCountSlot;
#[cfg(feature = "sqlite")]
pub use store::SqliteStore;
