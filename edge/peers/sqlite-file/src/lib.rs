//! The user table in a SQLite database file through rusqlite: a peer measured beside
//! userstore's engines on the edge (a `wasi:http/proxy` component, the file under a
//! preopened `/data`).
//!
//! One table `users(id INTEGER PRIMARY KEY, username TEXT NOT NULL)` with the index
//! `users_by_name` on `username` (usernames are unique: every write checks the name in its
//! own transaction), `shared_usernames` (the names several users shared in a file written
//! before names were unique, recorded when its index was built at the open), and
//! `userstore_meta` recording `engine = "SqliteFile"`, so a file of another engine is
//! refused. Every write call is one transaction, as durable as the configured `synchronous`
//! makes it; the journal mode is configurable ([`SqliteFileConfig`]).

mod config;
mod counting_vfs;
#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod sim_vfs;
mod store;

pub use config::{JournalMode, SqliteFileConfig, Synchronous};
pub use store::{SqliteFileStore, ENGINE_NAME};
