//! [`SqliteFileStore`]: the [`UserStore`] over a SQLite database file.

use crate::config::SqliteFileConfig;
use crate::counting_vfs;
use rusqlite::{ffi, params, Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction};
use std::ffi::CStr;
use std::path::Path;
use std::sync::Arc;
use userstore::limits;
use userstore::{StoreError, User, UserStore};
use userstore_peer_common::{check_file, FileKind, IoCounters, IoCounts};

/// The engine's name, as recorded in the file and reported by the host.
pub const ENGINE_NAME: &str = "SqliteFile";

/// SQLite's VFS. On WASI, `unix-none`: SQLite's WASI build locks with a directory
/// `<database>.lock` (`unix-dotfile`), the very name of the edge host's own lock file, which
/// already gives one request at a time the whole file; natively, SQLite's default.
#[cfg(target_os = "wasi")]
const VFS: &CStr = c"unix-none";
/// SQLite's VFS. On WASI, `unix-none`: SQLite's WASI build locks with a directory
/// `<database>.lock` (`unix-dotfile`), the very name of the edge host's own lock file, which
/// already gives one request at a time the whole file; natively, SQLite's default.
#[cfg(not(target_os = "wasi"))]
const VFS: &CStr = c"unix";

/// The schema of a new file, created in one transaction with the engine's name.
const SCHEMA: &str = "CREATE TABLE userstore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL);";

/// The user table in a SQLite database file.
pub struct SqliteFileStore {
    pub(crate) connection: Connection,
    /// What the connection's files read, wrote and synced since the open (through the
    /// `userstore-counting` VFS around [`VFS`]).
    io: Arc<IoCounters>,
}

/// A rusqlite error as [`StoreError::Storage`], with what was being done.
fn storage(context: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |error| StoreError::storage(context, error)
}

/// An id as SQLite's rowid; `None` above `i64::MAX`, where no row can be.
fn rowid(id: u64) -> Option<i64> {
    i64::try_from(id).ok()
}

/// Whether `error` is the primary key's uniqueness failing.
fn is_duplicate(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _)
        if failure.code == ErrorCode::ConstraintViolation
            && failure.extended_code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

impl SqliteFileStore {
    /// Opens the database at `path` in SQLite's `DELETE` journal mode with
    /// `synchronous=FULL`, creating it if the file is absent or empty.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteFileConfig::default())
    }

    /// Opens the database at `path` with `config`, creating it (its tables and the engine's
    /// name) if the file is absent or empty. A file of another engine, or a SQLite database
    /// that is not userstore data, is refused with [`StoreError::InvalidConfig`], as is a
    /// journal mode the file system cannot give.
    pub fn open_with(path: &Path, config: SqliteFileConfig) -> Result<Self, StoreError> {
        check_file(path, &FileKind::Sqlite, ENGINE_NAME)?;
        if !counting_vfs::register(VFS) {
            return Err(StoreError::storage(
                "opening the database",
                format!("SQLite has no {VFS:?} VFS"),
            ));
        }
        let path = path.to_str().ok_or_else(|| {
            StoreError::invalid_config("the data file's path is not UTF-8: SQLite cannot open it")
        })?;
        let io = Arc::new(IoCounters::default());
        let uri = counting_vfs::uri(path, counting_vfs::register_counters(&io));
        Self::open_on(&uri, config, counting_vfs::NAME, io)
    }

    /// Opens `name` (a path, or a `file:` URI) with the VFS named `vfs` and `config`,
    /// creating the schema if the database is empty; `io` is what the VFS counts in.
    pub(crate) fn open_on(
        name: &str,
        config: SqliteFileConfig,
        vfs: &CStr,
        io: Arc<IoCounters>,
    ) -> Result<Self, StoreError> {
        let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_URI;
        let connection = Connection::open_with_flags_and_vfs(name, flags, vfs)
            .map_err(storage("opening the database"))?;
        configure(&connection, config)?;
        let mut store = Self { connection, io };
        if !store.check_engine()? {
            store.create_schema()?;
        }
        Ok(store)
    }

    /// What the store read, wrote and synced since it was opened (the open included): the
    /// `xRead`, `xWrite` and `xSync` calls on its database, journal and WAL files.
    pub fn io(&self) -> IoCounts {
        self.io.snapshot()
    }

    /// Whether the file records this engine; `false` if it is a new, empty database.
    fn check_engine(&self) -> Result<bool, StoreError> {
        let tables: i64 = self
            .connection
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(storage("reading the schema"))?;
        if tables == 0 {
            return Ok(false);
        }
        let has_meta: bool = self
            .connection
            .query_row(
                "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'userstore_meta'",
                [],
                |row| row.get(0),
            )
            .map_err(storage("reading the schema"))?;
        let recorded: Option<String> = if has_meta {
            self.connection
                .query_row(
                    "SELECT value FROM userstore_meta WHERE key = 'engine'",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .map_err(storage("reading the metadata"))?
        } else {
            None
        };
        match recorded {
            Some(name) if name == ENGINE_NAME => Ok(true),
            Some(name) => Err(StoreError::invalid_config(format!(
                "the data file belongs to the {name} engine; this is the {ENGINE_NAME} engine"
            ))),
            None => Err(StoreError::invalid_config(
                "the SQLite database names no userstore engine; it is not userstore data",
            )),
        }
    }

    /// Creates the tables and records the engine's name, in one transaction.
    fn create_schema(&mut self) -> Result<(), StoreError> {
        self.write(|transaction| {
            transaction
                .execute_batch(SCHEMA)
                .map_err(storage("creating the tables"))?;
            transaction
                .execute(
                    "INSERT INTO userstore_meta (key, value) VALUES ('engine', ?1)",
                    [ENGINE_NAME],
                )
                .map_err(storage("recording the engine"))?;
            Ok(())
        })
    }

    /// Runs `body` in one transaction, committed if it succeeds and rolled back otherwise.
    fn write<T>(
        &mut self,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let transaction = self
            .connection
            .transaction()
            .map_err(storage("starting a transaction"))?;
        // Dropped without a commit, the transaction rolls back.
        let value = body(&transaction)?;
        transaction.commit().map_err(storage("committing"))?;
        Ok(value)
    }
}

/// Applies `config`'s pragmas, checking that SQLite took the journal mode.
fn configure(connection: &Connection, config: SqliteFileConfig) -> Result<(), StoreError> {
    // Always exclusive, before the journal mode is read: without shared memory (WASI),
    // SQLite opens a file in WAL mode (this configuration's, or one left by an earlier open
    // in WAL mode) only with its WAL index in the heap, which needs an exclusive lock. The
    // host serves one request at a time, on one connection, so the lock costs nothing, and it
    // spares every transaction its lock and unlock (a lock directory made and removed, with
    // SQLite's WASI locking), as the canister engines do (`locking_mode = Exclusive`).
    connection
        .pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(storage("setting locking_mode"))?;
    let wanted = config.journal_mode.pragma();
    let mode: String = connection
        .pragma_update_and_check(None, "journal_mode", wanted, |row| row.get(0))
        .map_err(storage("setting journal_mode"))?;
    if !mode.eq_ignore_ascii_case(wanted) {
        return Err(StoreError::invalid_config(format!(
            "journal_mode={wanted} is not available here: SQLite kept {mode}"
        )));
    }
    connection
        .pragma_update(None, "synchronous", config.synchronous.pragma())
        .map_err(storage("setting synchronous"))?;
    let level: i64 = connection
        .pragma_query_value(None, "synchronous", |row| row.get(0))
        .map_err(storage("reading synchronous"))?;
    if level != config.synchronous.level() {
        return Err(StoreError::invalid_config(format!(
            "synchronous={} is not available here: SQLite kept level {level}",
            config.synchronous.pragma()
        )));
    }
    Ok(())
}

/// Inserts `users` in order; the first whose id exists is [`StoreError::DuplicateId`] (the
/// caller's transaction then rolls back).
fn insert_all(transaction: &Transaction<'_>, users: &[User]) -> Result<(), StoreError> {
    let mut insert = transaction
        .prepare_cached("INSERT INTO users (id, username) VALUES (?1, ?2)")
        .map_err(storage("preparing an insert"))?;
    for user in users {
        // Checked by the caller (`limits::check_id`): no id is above `i64::MAX` here.
        let id = rowid(user.id).ok_or_else(|| StoreError::invalid_input("an id above i64::MAX"))?;
        match insert.execute(params![id, user.username]) {
            Ok(_) => {}
            Err(error) if is_duplicate(&error) => {
                return Err(StoreError::DuplicateId { id: user.id })
            }
            Err(error) => return Err(storage("inserting a user")(error)),
        }
    }
    Ok(())
}

/// The username of `id`, or [`StoreError::NotFound`].
fn username_of(connection: &Connection, id: u64) -> Result<String, StoreError> {
    let Some(rowid) = rowid(id) else {
        return Err(StoreError::NotFound { id });
    };
    connection
        .prepare_cached("SELECT username FROM users WHERE id = ?1")
        .and_then(|mut select| select.query_row([rowid], |row| row.get(0)).optional())
        .map_err(storage("reading a user"))?
        .ok_or(StoreError::NotFound { id })
}

/// Sets the username of each user in order; the first id absent is
/// [`StoreError::NotFound`] (the caller's transaction then rolls back).
fn rename_all(transaction: &Transaction<'_>, users: &[User]) -> Result<(), StoreError> {
    let mut update = transaction
        .prepare_cached("UPDATE users SET username = ?2 WHERE id = ?1")
        .map_err(storage("preparing an update"))?;
    for user in users {
        let Some(id) = rowid(user.id) else {
            return Err(StoreError::NotFound { id: user.id });
        };
        let changed = update
            .execute(params![id, user.username])
            .map_err(storage("updating a user"))?;
        if changed == 0 {
            return Err(StoreError::NotFound { id: user.id });
        }
    }
    Ok(())
}

/// Deletes each id in order; the first absent is [`StoreError::NotFound`] (the caller's
/// transaction then rolls back).
fn delete_all(transaction: &Transaction<'_>, ids: &[u64]) -> Result<(), StoreError> {
    let mut delete = transaction
        .prepare_cached("DELETE FROM users WHERE id = ?1")
        .map_err(storage("preparing a delete"))?;
    for id in ids {
        let Some(rowid) = rowid(*id) else {
            return Err(StoreError::NotFound { id: *id });
        };
        let changed = delete
            .execute([rowid])
            .map_err(storage("deleting a user"))?;
        if changed == 0 {
            return Err(StoreError::NotFound { id: *id });
        }
    }
    Ok(())
}

impl UserStore for SqliteFileStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        self.write(|transaction| insert_all(transaction, std::slice::from_ref(&user)))
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.write(|transaction| insert_all(transaction, users))?;
        Ok(users.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        username_of(&self.connection, id).map(|username| User::new(id, username))
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        let Some(start) = userstore_peer_common::page_start(after, limit)?.and_then(rowid) else {
            return Ok(Vec::new());
        };
        let mut select = self
            .connection
            .prepare_cached("SELECT id, username FROM users WHERE id >= ?1 ORDER BY id LIMIT ?2")
            .map_err(storage("preparing a page"))?;
        let rows = select
            .query_map(params![start, i64::from(limit)], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(storage("listing users"))?;
        rows.map(|row| {
            let (id, username) = row.map_err(storage("listing users"))?;
            let id = u64::try_from(id)
                .map_err(|_| StoreError::storage("listing users", "a negative id"))?;
            Ok(User::new(id, username))
        })
        .collect()
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        self.write(|transaction| {
            let before = username_of(transaction, id)?;
            rename_all(transaction, &[User::new(id, username)])?;
            Ok(User::new(id, before))
        })
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.write(|transaction| {
            let before = username_of(transaction, id)?;
            delete_all(transaction, &[id])?;
            Ok(User::new(id, before))
        })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.write(|transaction| rename_all(transaction, users))?;
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        self.write(|transaction| delete_all(transaction, ids))?;
        Ok(ids.len() as u64)
    }

    fn count(&self) -> Result<u64, StoreError> {
        let rows: i64 = self
            .connection
            .prepare_cached("SELECT count(*) FROM users")
            .and_then(|mut select| select.query_row([], |row| row.get(0)))
            .map_err(storage("counting users"))?;
        u64::try_from(rows).map_err(|_| StoreError::storage("counting users", "a negative count"))
    }
}

#[cfg(test)]
mod tests;
