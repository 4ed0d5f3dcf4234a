//! How a store describes itself to callers (the `config` query): which engine, which
//! version, which configuration.
//!
//! [`Engine`] is the list of engines: adding an engine adds one variant here, its folder
//! under `src/` and its [`crate::engine::StorageEngine`] implementation.

use crate::sqlite::SqliteConfig;
use candid::CandidType;
use serde::{Deserialize, Serialize};

/// Which storage engine a store uses.
#[derive(CandidType, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// ic-stable-structures' `StableBTreeMap<u64, Username>`.
    StableBTreeMap,
    /// SQLite, one `users` table, on ic-wasi-polyfill's file system.
    Sqlite,
    /// SQLite, one `users` table, its pages straight in a stable-memory virtual memory
    /// through this crate's VFS.
    StableSqlite,
}

/// What a store is and how it is configured, as reported by the canisters' `config` query.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct EngineInfo {
    /// The engine.
    pub engine: Engine,
    /// The engine's version (`ic-stable-structures` crate version, or SQLite library version).
    pub engine_version: String,
    /// The SQLite configuration in force, for a SQLite engine.
    pub sqlite: Option<SqliteConfig>,
}
