//! The [`SqliteStore`] itself: the shared table on a connection to a database file.

use crate::error::StoreError;
use crate::sqlite_shared::{delegate_user_store, page_cache, SqlTable, SqliteConfig};
use rusqlite::Connection;
use std::path::Path;

/// The user table in SQLite on a database file (in a canister, on ic-wasi-polyfill's file
/// system; natively, a file or an in-memory database). The row count lives in a one-row
/// table `user_count`, changed in the same transaction as every insert and delete
/// ([`SqlTable`]).
pub struct SqliteStore {
    table: SqlTable,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` with `config`.
    ///
    /// Fails with [`StoreError::InvalidConfig`] if SQLite does not apply a setting as asked
    /// (for example WAL on storage that cannot hold it, or a page size other than the one an
    /// existing database was created with).
    pub fn open(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Self, StoreError> {
        config.validate()?;
        page_cache::install();
        let connection = Connection::open(path.as_ref())
            .map_err(|error| StoreError::storage("opening the database", error))?;
        Ok(Self {
            table: SqlTable::open(connection, config, None)?,
        })
    }

    /// Opens a private in-memory database (for tests; journal modes other than `Memory` and
    /// `Off` are refused, as SQLite does not apply them to in-memory databases).
    pub fn open_in_memory(config: SqliteConfig) -> Result<Self, StoreError> {
        config.validate()?;
        page_cache::install();
        let connection = Connection::open_in_memory()
            .map_err(|error| StoreError::storage("opening the database", error))?;
        Ok(Self {
            table: SqlTable::open(connection, config, None)?,
        })
    }

    /// Closes the connection, flushing what SQLite holds (a WAL is checkpointed).
    pub fn close(self) -> Result<(), StoreError> {
        self.table.close()
    }

    /// Checks the database's structure and the kept row count ([`SqlTable::check_integrity`]).
    pub fn check_integrity(&self) -> Result<(), StoreError> {
        self.table.check_integrity()
    }

    /// The configuration the store was opened with (and SQLite confirmed).
    pub fn config(&self) -> &SqliteConfig {
        self.table.config()
    }
}

delegate_user_store!(SqliteStore, table);
