//! [`RedbStore`]: the [`UserStore`] over a redb database.

use crate::counting::CountingBackend;
use redb::backends::FileBackend;
use redb::{
    Builder, Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    Table, TableDefinition, TableError, WriteTransaction,
};
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Arc;
use userstore::limits;
use userstore::{StoreError, User, UserStore};
use userstore_peer_common::{check_file, FileKind, IoCounters, IoCounts};

/// The engine's name, as recorded in the file and reported by the host.
pub const ENGINE_NAME: &str = "Redb";

/// The user table: id to username.
const USERS: TableDefinition<u64, &str> = TableDefinition::new("users");

/// The file's metadata: `engine` names the engine that owns it.
const META: TableDefinition<&str, &str> = TableDefinition::new("userstore_meta");

/// The metadata key that names the engine.
const ENGINE_KEY: &str = "engine";

/// The user table in a redb database file.
pub struct RedbStore {
    db: Database,
    /// What the data file's backend read, wrote and synced since the open.
    io: Arc<IoCounters>,
}

/// A redb error as [`StoreError::Storage`], with what was being done.
fn storage(context: &'static str) -> impl Fn(redb::Error) -> StoreError {
    move |error| StoreError::storage(context, error)
}

impl RedbStore {
    /// Opens the database at `path`, creating it (with its tables and the engine's name) if
    /// the file is absent or empty. A file of another engine, or a redb database that another
    /// program wrote, is refused with [`StoreError::InvalidConfig`].
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        check_file(path, &FileKind::Redb, ENGINE_NAME)?;
        // What `Database::create` does, with the file's backend counted.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|error| StoreError::storage("opening the data file", error))?;
        let io = Arc::new(IoCounters::default());
        let backend = FileBackend::new(file)
            .map_err(|error| storage("opening the redb database")(error.into()))?;
        let db = Builder::new()
            .create_with_backend(CountingBackend::new(backend, io.clone()))
            .map_err(|error| storage("opening the redb database")(error.into()))?;
        let store = Self { db, io };
        if !store.check_engine()? {
            store.record_engine()?;
        }
        Ok(store)
    }

    /// What the store read, wrote and synced since it was opened (the open included): its
    /// data file's backend calls.
    pub fn io(&self) -> IoCounts {
        self.io.snapshot()
    }

    /// Whether the file records this engine; `false` if it records nothing yet (a new file).
    fn check_engine(&self) -> Result<bool, StoreError> {
        let read = self.read()?;
        let meta = match read.open_table(META) {
            Ok(meta) => meta,
            Err(TableError::TableDoesNotExist(_)) => {
                // A new database has no table; one with tables but no metadata is not ours.
                let mut tables = read
                    .list_tables()
                    .map_err(|error| storage("listing the tables")(error.into()))?;
                if tables.next().is_none() {
                    return Ok(false);
                }
                return Err(StoreError::invalid_config(
                    "the redb database names no userstore engine; it is not userstore data",
                ));
            }
            Err(error) => return Err(storage("reading the metadata")(error.into())),
        };
        let recorded = meta
            .get(ENGINE_KEY)
            .map_err(|error| storage("reading the metadata")(error.into()))?;
        match recorded {
            Some(name) if name.value() == ENGINE_NAME => Ok(true),
            Some(name) => Err(StoreError::invalid_config(format!(
                "the data file belongs to the {} engine; this is the {ENGINE_NAME} engine",
                name.value()
            ))),
            None => Err(StoreError::invalid_config(
                "the redb database names no userstore engine; it is not userstore data",
            )),
        }
    }

    /// Records the engine's name and creates the user table, in one durable commit.
    fn record_engine(&self) -> Result<(), StoreError> {
        self.write(|write| {
            let mut meta = write
                .open_table(META)
                .map_err(|error| storage("creating the metadata")(error.into()))?;
            meta.insert(ENGINE_KEY, ENGINE_NAME)
                .map_err(|error| storage("recording the engine")(error.into()))?;
            drop(meta);
            users(write).map(drop)
        })
    }

    /// A read transaction.
    fn read(&self) -> Result<ReadTransaction, StoreError> {
        self.db
            .begin_read()
            .map_err(|error| storage("starting a read")(error.into()))
    }

    /// Runs `body` in one write transaction, committed (durably) if it succeeds and aborted
    /// otherwise.
    fn write<T>(
        &self,
        body: impl FnOnce(&WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let write = self
            .db
            .begin_write()
            .map_err(|error| storage("starting a write")(error.into()))?;
        match body(&write) {
            Ok(value) => {
                write
                    .commit()
                    .map_err(|error| storage("committing")(error.into()))?;
                Ok(value)
            }
            Err(error) => {
                // The error to report is the body's; an abort that fails changes nothing.
                let _ = write.abort();
                Err(error)
            }
        }
    }

    /// Runs `body` on the user table in a read transaction.
    fn read_users<T>(
        &self,
        body: impl FnOnce(&redb::ReadOnlyTable<u64, &'static str>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let read = self.read()?;
        let table = read
            .open_table(USERS)
            .map_err(|error| storage("opening the user table")(error.into()))?;
        body(&table)
    }
}

/// The user table of a write transaction.
fn users(write: &WriteTransaction) -> Result<Table<'_, u64, &'static str>, StoreError> {
    write
        .open_table(USERS)
        .map_err(|error| storage("opening the user table")(error.into()))
}

/// Whether `id` is in `table`.
fn contains(table: &impl ReadableTable<u64, &'static str>, id: u64) -> Result<bool, StoreError> {
    table
        .get(id)
        .map(|found| found.is_some())
        .map_err(|error| storage("reading a user")(error.into()))
}

/// Inserts every user of `users` absent from `table`; the first present one, in order, is
/// [`StoreError::DuplicateId`] before anything is written.
fn insert_all(table: &mut Table<'_, u64, &'static str>, users: &[User]) -> Result<(), StoreError> {
    for user in users {
        if contains(table, user.id)? {
            return Err(StoreError::DuplicateId { id: user.id });
        }
    }
    for user in users {
        table
            .insert(user.id, user.username.as_str())
            .map_err(|error| storage("inserting a user")(error.into()))?;
    }
    Ok(())
}

/// Checks that every id of `ids` is in `table`: the first absent one, in order, is
/// [`StoreError::NotFound`].
fn check_present(
    table: &impl ReadableTable<u64, &'static str>,
    ids: impl IntoIterator<Item = u64>,
) -> Result<(), StoreError> {
    for id in ids {
        if !contains(table, id)? {
            return Err(StoreError::NotFound { id });
        }
    }
    Ok(())
}

/// Sets `id`'s username in `table` and returns the one it had.
fn replace(
    table: &mut Table<'_, u64, &'static str>,
    id: u64,
    username: &str,
) -> Result<User, StoreError> {
    let previous = table
        .insert(id, username)
        .map_err(|error| storage("updating a user")(error.into()))?
        .map(|before| before.value().to_owned());
    previous
        .map(|before| User::new(id, before))
        .ok_or(StoreError::NotFound { id })
}

/// Removes `id` from `table` and returns it.
fn remove(table: &mut Table<'_, u64, &'static str>, id: u64) -> Result<User, StoreError> {
    let removed = table
        .remove(id)
        .map_err(|error| storage("deleting a user")(error.into()))?
        .map(|before| before.value().to_owned());
    removed
        .map(|before| User::new(id, before))
        .ok_or(StoreError::NotFound { id })
}

impl UserStore for RedbStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        self.write(|write| insert_all(&mut users(write)?, std::slice::from_ref(&user)))
    }

    fn insert_batch(&mut self, batch: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(batch)?;
        self.write(|write| insert_all(&mut users(write)?, batch))?;
        Ok(batch.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.read_users(|table| {
            let found = table
                .get(id)
                .map_err(|error| storage("reading a user")(error.into()))?;
            found
                .map(|username| User::new(id, username.value()))
                .ok_or(StoreError::NotFound { id })
        })
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        let Some(start) = userstore_peer_common::page_start(after, limit)? else {
            return Ok(Vec::new());
        };
        self.read_users(|table| {
            let range = table
                .range(start..)
                .map_err(|error| storage("listing users")(error.into()))?;
            range
                .take(limit as usize)
                .map(|entry| {
                    let (id, username) =
                        entry.map_err(|error| storage("listing users")(error.into()))?;
                    Ok(User::new(id.value(), username.value()))
                })
                .collect()
        })
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        self.write(|write| {
            let mut table = users(write)?;
            check_present(&table, [id])?;
            replace(&mut table, id, username)
        })
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.write(|write| remove(&mut users(write)?, id))
    }

    fn update_batch(&mut self, batch: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(batch)?;
        self.write(|write| {
            let mut table = users(write)?;
            check_present(&table, batch.iter().map(|user| user.id))?;
            for user in batch {
                replace(&mut table, user.id, &user.username)?;
            }
            Ok(batch.len() as u64)
        })
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        self.write(|write| {
            let mut table = users(write)?;
            check_present(&table, ids.iter().copied())?;
            for id in ids {
                remove(&mut table, *id)?;
            }
            Ok(ids.len() as u64)
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.read_users(|table| {
            table
                .len()
                .map_err(|error| storage("counting users")(error.into()))
        })
    }
}

#[cfg(test)]
mod tests;
