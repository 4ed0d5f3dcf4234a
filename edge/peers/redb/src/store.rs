//! [`RedbStore`]: the [`UserStore`] over a redb database.

use crate::counting::CountingBackend;
use redb::backends::FileBackend;
use redb::{
    Builder, Database, MultimapTable, MultimapTableDefinition, ReadOnlyMultimapTable,
    ReadTransaction, ReadableDatabase, ReadableMultimapTable, ReadableTable, ReadableTableMetadata,
    Table, TableDefinition, TableError, WriteTransaction,
};
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Arc;
use userstore::limits;
use userstore::unique::taken;
use userstore::{StoreError, User, UserStore};
use userstore_peer_common::{check_file, FileKind, IoCounters, IoCounts};

/// The engine's name, as recorded in the file and reported by the host.
pub const ENGINE_NAME: &str = "Redb";

/// The user table: id to username.
const USERS: TableDefinition<u64, &str> = TableDefinition::new("users");

/// The by-name index: username to the ids of the users that have it, changed in the same
/// write transaction as [`USERS`]. redb keeps a key's values in order, so the first is the
/// lowest id. A name has one id, but for the names in [`SHARED`].
const BY_NAME: MultimapTableDefinition<&str, u64> = MultimapTableDefinition::new("users_by_name");

/// The names several users had when the index was built (a file written before names were
/// unique): the only names that can have more than one id. No write adds one; a name stays
/// here after it stops being shared, so readers count its ids.
const SHARED: TableDefinition<&str, ()> = TableDefinition::new("shared_usernames");

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

/// A redb error (any of its kinds) as [`StoreError::Storage`], with what was being done.
fn storage<E: Into<redb::Error>>(context: &'static str) -> impl Fn(E) -> StoreError {
    move |error| StoreError::storage(context, error.into())
}

impl RedbStore {
    /// Opens the database at `path`, creating it (with its tables and the engine's name) if
    /// the file is absent or empty. A file of another engine, or a redb database that another
    /// program wrote, is refused with [`StoreError::InvalidConfig`]. A file written before
    /// names were unique (its users without the by-name index) gets the index at the open,
    /// every row kept ([`UserStore::shared_usernames`] lists the names several users share).
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
        let backend = FileBackend::new(file).map_err(storage("opening the redb database"))?;
        let db = Builder::new()
            .create_with_backend(CountingBackend::new(backend, io.clone()))
            .map_err(storage("opening the redb database"))?;
        let store = Self { db, io };
        if store.check_engine()? {
            store.ensure_name_index()?;
        } else {
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
                let mut tables = read.list_tables().map_err(storage("listing the tables"))?;
                if tables.next().is_none() {
                    return Ok(false);
                }
                return Err(StoreError::invalid_config(
                    "the redb database names no userstore engine; it is not userstore data",
                ));
            }
            Err(error) => return Err(storage("reading the metadata")(error)),
        };
        let recorded = meta
            .get(ENGINE_KEY)
            .map_err(storage("reading the metadata"))?;
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

    /// Records the engine's name and creates the user table and its index, in one durable
    /// commit.
    fn record_engine(&self) -> Result<(), StoreError> {
        self.write(|write| {
            let mut meta = write
                .open_table(META)
                .map_err(storage("creating the metadata"))?;
            meta.insert(ENGINE_KEY, ENGINE_NAME)
                .map_err(storage("recording the engine"))?;
            drop(meta);
            WriteTables::open(write)?;
            shared(write).map(drop)
        })
    }

    /// Builds the by-name index if the file has none (one written before names were unique),
    /// in one durable write transaction. The index is created in the same transaction as its
    /// entries, so its presence says the build is done: a reopened file is only read.
    fn ensure_name_index(&self) -> Result<(), StoreError> {
        // The read ends with this statement, before the build's write begins.
        let present = match self.read()?.open_multimap_table(BY_NAME) {
            Ok(_) => true,
            Err(TableError::TableDoesNotExist(_)) => false,
            Err(error) => return Err(storage("opening the by-name index")(error)),
        };
        if present {
            return Ok(());
        }
        self.write(build_name_index)
    }

    /// A read transaction.
    fn read(&self) -> Result<ReadTransaction, StoreError> {
        self.db.begin_read().map_err(storage("starting a read"))
    }

    /// Runs `body` in one write transaction, committed (durably) if it succeeds and aborted
    /// otherwise: a write that fails part way leaves nothing behind.
    fn write<T>(
        &self,
        body: impl FnOnce(&WriteTransaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let write = self.db.begin_write().map_err(storage("starting a write"))?;
        match body(&write) {
            Ok(value) => {
                write.commit().map_err(storage("committing"))?;
                Ok(value)
            }
            Err(error) => {
                // The error to report is the body's; an abort that fails changes nothing.
                let _ = write.abort();
                Err(error)
            }
        }
    }

    /// Runs `body` on the rows and their index in one write transaction (see
    /// [`RedbStore::write`]).
    fn write_tables<T>(
        &self,
        body: impl FnOnce(&mut WriteTables<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write(|write| body(&mut WriteTables::open(write)?))
    }

    /// Runs `body` on the user table in a read transaction.
    fn read_users<T>(
        &self,
        body: impl FnOnce(&redb::ReadOnlyTable<u64, &'static str>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let read = self.read()?;
        let table = read
            .open_table(USERS)
            .map_err(storage("opening the user table"))?;
        body(&table)
    }

    /// Runs `body` on the by-name index in a read transaction.
    fn read_index<T>(
        &self,
        body: impl FnOnce(&ReadOnlyMultimapTable<&'static str, u64>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let read = self.read()?;
        let index = read
            .open_multimap_table(BY_NAME)
            .map_err(storage("opening the by-name index"))?;
        body(&index)
    }
}

/// The table of shared names, in a write transaction.
fn shared(write: &WriteTransaction) -> Result<Table<'_, &'static str, ()>, StoreError> {
    write
        .open_table(SHARED)
        .map_err(storage("opening the shared usernames"))
}

/// Indexes every row of a user table written without the index, recording each name that
/// more than one user has in [`SHARED`] (as it meets its second user).
fn build_name_index(write: &WriteTransaction) -> Result<(), StoreError> {
    let fail = storage("building the by-name index");
    let mut tables = WriteTables::open(write)?;
    let mut shared = shared(write)?;
    for entry in tables.users.iter().map_err(&fail)? {
        let (id, username) = entry.map_err(&fail)?;
        let (id, username) = (id.value(), username.value());
        if holders(&tables.by_name, username)?.next().is_some() {
            shared.insert(username, ()).map_err(&fail)?;
        }
        tables.by_name.insert(username, id).map_err(&fail)?;
    }
    Ok(())
}

/// The ids of the users named `username` in `index`, lowest first.
fn holders<'index>(
    index: &'index impl ReadableMultimapTable<&'static str, u64>,
    username: &str,
) -> Result<impl Iterator<Item = Result<u64, StoreError>> + 'index, StoreError> {
    let fail = storage("looking a username up");
    let ids = index.get(username).map_err(&fail)?;
    Ok(ids.map(move |id| id.map(|id| id.value()).map_err(&fail)))
}

/// The rows and their by-name index, open in one write transaction: every write goes
/// through these, so the two change together or, on an error (the transaction aborted), not
/// at all.
struct WriteTables<'txn> {
    /// Id to username.
    users: Table<'txn, u64, &'static str>,
    /// Username to ids ([`BY_NAME`]).
    by_name: MultimapTable<'txn, &'static str, u64>,
}

impl<'txn> WriteTables<'txn> {
    /// Opens (creating, in a new file) both tables in `write`.
    fn open(write: &'txn WriteTransaction) -> Result<Self, StoreError> {
        Ok(Self {
            users: write
                .open_table(USERS)
                .map_err(storage("opening the user table"))?,
            by_name: write
                .open_multimap_table(BY_NAME)
                .map_err(storage("opening the by-name index"))?,
        })
    }

    /// The username of `id`, if there is such a user.
    fn username_of(&self, id: u64) -> Result<Option<String>, StoreError> {
        let found = self.users.get(id).map_err(storage("reading a user"))?;
        Ok(found.map(|username| username.value().to_owned()))
    }

    /// Whether a user other than `id` is named `username`.
    fn held_by_other(&self, username: &str, id: u64) -> Result<bool, StoreError> {
        for holder in holders(&self.by_name, username)? {
            if holder? != id {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Inserts `user`: [`StoreError::DuplicateId`] if the id exists, else
    /// [`StoreError::UsernameTaken`] if a user has the name.
    fn insert(&mut self, user: &User) -> Result<(), StoreError> {
        if self.username_of(user.id)?.is_some() {
            return Err(StoreError::DuplicateId { id: user.id });
        }
        if self.held_by_other(&user.username, user.id)? {
            return Err(taken(&user.username));
        }
        let fail = storage("inserting a user");
        self.users
            .insert(user.id, user.username.as_str())
            .map_err(&fail)?;
        self.by_name
            .insert(user.username.as_str(), user.id)
            .map_err(&fail)?;
        Ok(())
    }

    /// Gives `id` the name `username` and returns the user as it was:
    /// [`StoreError::NotFound`] if there is no such user, [`StoreError::UsernameTaken`] if
    /// another user has the name. Its own name is no change.
    fn rename(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        let previous = self.username_of(id)?.ok_or(StoreError::NotFound { id })?;
        if previous == username {
            return Ok(User::new(id, previous));
        }
        if self.held_by_other(username, id)? {
            return Err(taken(username));
        }
        let fail = storage("updating a user");
        self.users.insert(id, username).map_err(&fail)?;
        // The old name is free from here on, for the rest of a batch too.
        self.by_name.remove(previous.as_str(), id).map_err(&fail)?;
        self.by_name.insert(username, id).map_err(&fail)?;
        Ok(User::new(id, previous))
    }

    /// Removes `id` and its name and returns the user, or [`StoreError::NotFound`].
    fn remove(&mut self, id: u64) -> Result<User, StoreError> {
        let fail = storage("deleting a user");
        let removed = self.users.remove(id).map_err(&fail)?;
        let username = removed
            .map(|username| username.value().to_owned())
            .ok_or(StoreError::NotFound { id })?;
        self.by_name.remove(username.as_str(), id).map_err(&fail)?;
        Ok(User::new(id, username))
    }
}

impl UserStore for RedbStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        self.write_tables(|tables| tables.insert(&user))
    }

    fn insert_batch(&mut self, batch: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(batch)?;
        // Row by row in order, in one transaction: the first row that fails aborts it all.
        self.write_tables(|tables| batch.iter().try_for_each(|user| tables.insert(user)))?;
        Ok(batch.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.read_users(|table| {
            let found = table.get(id).map_err(storage("reading a user"))?;
            found
                .map(|username| User::new(id, username.value()))
                .ok_or(StoreError::NotFound { id })
        })
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        match self.ids_named(username, 1)?.first() {
            Some(id) => Ok(User::new(*id, username)),
            None => Err(StoreError::UsernameNotFound {
                username: username.to_owned(),
            }),
        }
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        self.read_index(|index| holders(index, username)?.take(limit).collect())
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let read = self.read()?;
        let shared = read
            .open_table(SHARED)
            .map_err(storage("opening the shared usernames"))?;
        let index = read
            .open_multimap_table(BY_NAME)
            .map_err(storage("opening the by-name index"))?;
        let fail = storage("listing shared usernames");
        let mut names = Vec::new();
        for entry in shared.iter().map_err(&fail)? {
            if names.len() >= limit {
                break;
            }
            let (name, _) = entry.map_err(&fail)?;
            // Recorded when the index was built; still shared only if two users have it.
            if index.get(name.value()).map_err(&fail)?.len() > 1 {
                names.push(name.value().to_owned());
            }
        }
        Ok(names)
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        let Some(start) = userstore_peer_common::page_start(after, limit)? else {
            return Ok(Vec::new());
        };
        self.read_users(|table| {
            let fail = storage("listing users");
            let range = table.range(start..).map_err(&fail)?;
            range
                .take(limit as usize)
                .map(|entry| {
                    let (id, username) = entry.map_err(&fail)?;
                    Ok(User::new(id.value(), username.value()))
                })
                .collect()
        })
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        self.write_tables(|tables| tables.rename(id, username))
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.write_tables(|tables| tables.remove(id))
    }

    fn update_batch(&mut self, batch: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(batch)?;
        // Row by row in order: a rename frees its old name for the rows after it.
        self.write_tables(|tables| {
            batch
                .iter()
                .try_for_each(|user| tables.rename(user.id, &user.username).map(drop))
        })?;
        Ok(batch.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        // The first absent id, in order, aborts the transaction: nothing is deleted.
        self.write_tables(|tables| ids.iter().try_for_each(|id| tables.remove(*id).map(drop)))?;
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.read_users(|table| table.len().map_err(storage("counting users")))
    }
}

#[cfg(test)]
mod tests;
