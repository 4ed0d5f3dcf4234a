//! Applies a [`SqliteConfig`] to a connection and checks that SQLite took every setting.

use super::config::SqliteConfig;
use crate::error::StoreError;
use rusqlite::Connection;

/// Sets every pragma of `config`, in the order SQLite needs: the page size before the
/// first write, the locking mode before the journal mode (WAL without shared memory needs
/// exclusive locking first). The locking mode, journal mode and synchronous setting are read
/// back (the page size after the table exists, in [`check_page_size`]); one SQLite did not
/// apply is an [`StoreError::InvalidConfig`] error. SQLite applies cache_size and temp_store
/// as given.
pub(super) fn apply(connection: &Connection, config: &SqliteConfig) -> Result<(), StoreError> {
    set(connection, "page_size", i64::from(config.page_size))?;
    let locking_mode: String =
        set_and_report(connection, "locking_mode", config.locking_mode.as_sql())?;
    expect_equal("locking_mode", config.locking_mode.as_sql(), &locking_mode)?;
    let journal_mode: String =
        set_and_report(connection, "journal_mode", config.journal_mode.as_sql())?;
    expect_equal("journal_mode", config.journal_mode.as_sql(), &journal_mode)?;
    set(connection, "synchronous", config.synchronous.as_sql())?;
    let synchronous: i64 = read(connection, "synchronous")?;
    expect_equal(
        "synchronous",
        &config.synchronous.as_sql().to_string(),
        &synchronous.to_string(),
    )?;
    set(connection, "cache_size", i64::from(config.cache_size_pages))?;
    set(connection, "temp_store", "MEMORY")?;
    Ok(())
}

/// Checks the page size after the table exists: an existing database keeps the page size it
/// was created with, whatever `PRAGMA page_size` asked.
pub(super) fn check_page_size(
    connection: &Connection,
    config: &SqliteConfig,
) -> Result<(), StoreError> {
    let page_size: i64 = read(connection, "page_size")?;
    if page_size != i64::from(config.page_size) {
        return Err(StoreError::invalid_config(format!(
            "page_size {} was asked for, but the database was created with {page_size}; a page size cannot change after creation",
            config.page_size
        )));
    }
    Ok(())
}

fn set<V: rusqlite::ToSql>(
    connection: &Connection,
    name: &str,
    value: V,
) -> Result<(), StoreError> {
    connection
        .pragma_update(None, name, value)
        .map_err(|error| StoreError::storage(&format!("setting {name}"), error))
}

fn set_and_report<V: rusqlite::ToSql>(
    connection: &Connection,
    name: &str,
    value: V,
) -> Result<String, StoreError> {
    connection
        .pragma_update_and_check(None, name, value, |row| row.get::<_, String>(0))
        .map_err(|error| StoreError::storage(&format!("setting {name}"), error))
        .map(|reported| reported.to_lowercase())
}

fn read<T: rusqlite::types::FromSql>(connection: &Connection, name: &str) -> Result<T, StoreError> {
    connection
        .pragma_query_value(None, name, |row| row.get(0))
        .map_err(|error| StoreError::storage(&format!("reading {name}"), error))
}

fn expect_equal(name: &str, asked: &str, applied: &str) -> Result<(), StoreError> {
    if asked == applied {
        Ok(())
    } else {
        Err(StoreError::invalid_config(format!(
            "{name} {asked} was asked for, but SQLite applied {applied} on this storage"
        )))
    }
}
