//! [`SqliteFileStore`]: the [`UserStore`] over a SQLite database file.

use crate::config::{JournalMode, SqliteFileConfig};
use crate::counting_vfs;
use rusqlite::{ffi, params, Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction};
use std::ffi::CStr;
use std::path::Path;
use std::sync::Arc;
use userstore::limits;
use userstore::unique::{self, taken};
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
     CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL);
     CREATE INDEX users_by_name ON users (username);
     CREATE TABLE shared_usernames (username TEXT PRIMARY KEY);";

/// Whether the by-name index exists (a file written before names were unique has none).
const HAS_NAME_INDEX: &str =
    "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'index' AND name = 'users_by_name'";

/// The by-name index of a file written before names were unique, built in one transaction:
/// first the names several users share (kept, and served, as they are), then the index,
/// whose presence says the rest is done. On `username`, so on (`username`, `id`), which
/// orders one name's users by id; not `UNIQUE`, since those users keep their name: every
/// write checks the name instead ([`SELECT_OTHER_HOLDER`]).
const BUILD_NAME_INDEX: &str =
    "CREATE TABLE IF NOT EXISTS shared_usernames (username TEXT PRIMARY KEY);
     INSERT OR IGNORE INTO shared_usernames
         SELECT username FROM users GROUP BY username HAVING count(*) > 1;
     CREATE INDEX users_by_name ON users (username);";

/// Whether a user other than `?2` is named `?1` (exact bytes: SQLite's `BINARY` collation).
const SELECT_OTHER_HOLDER: &str = "SELECT 1 FROM users WHERE username = ?1 AND id != ?2 LIMIT 1";

/// The ids of at most `?2` users named `?1`, lowest first.
const SELECT_BY_NAME: &str = "SELECT id FROM users WHERE username = ?1 ORDER BY id LIMIT ?2";

/// At most `?1` of the names recorded as shared that more than one user still has, in byte
/// order.
const SELECT_SHARED: &str = "SELECT username FROM shared_usernames AS shared
     WHERE (SELECT count(*) FROM users WHERE users.username = shared.username) > 1
     ORDER BY username LIMIT ?1";

/// The user table in a SQLite database file.
pub struct SqliteFileStore {
    pub(crate) connection: Connection,
    /// The journal mode SQLite confirmed: without a journal ([`JournalMode::Off`]) a
    /// transaction cannot be rolled back, so a write is checked in full before it starts.
    journal_mode: JournalMode,
    /// What the connection's files read, wrote and synced since the open (through the
    /// `userstore-counting` VFS around [`VFS`]).
    io: Arc<IoCounters>,
}

/// A rusqlite error as [`StoreError::Storage`], with what was being done.
fn storage(context: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |error| StoreError::storage(context, error)
}

/// A count or limit as SQLite's integer, the largest one for any past `i64::MAX`.
fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
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
    /// journal mode the file system cannot give. A file written before names were unique
    /// (without the by-name index) gets the index at the open, every row kept
    /// ([`UserStore::shared_usernames`] lists the names several users share).
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
        let mut store = Self {
            connection,
            journal_mode: config.journal_mode,
            io,
        };
        if store.check_engine()? {
            store.ensure_name_index()?;
        } else {
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

    /// Builds the by-name index if the file has none (one written before names were unique),
    /// in one transaction ([`BUILD_NAME_INDEX`]). A file that has it is only read.
    fn ensure_name_index(&mut self) -> Result<(), StoreError> {
        let present: bool = self
            .connection
            .query_row(HAS_NAME_INDEX, [], |row| row.get(0))
            .map_err(storage("reading the schema"))?;
        if present {
            return Ok(());
        }
        self.write(|transaction| {
            transaction
                .execute_batch(BUILD_NAME_INDEX)
                .map_err(storage("building the by-name index"))
        })
    }

    /// Without a journal SQLite cannot roll a transaction back, so `check` (which reads the
    /// table and writes nothing) runs first: a write it refuses never starts. With a journal
    /// this costs nothing; the failing row rolls its transaction back instead.
    fn check_first_without_journal(
        &self,
        check: impl FnOnce(&Self) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if self.journal_mode == JournalMode::Off {
            check(self)?;
        }
        Ok(())
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

/// Inserts `users` in order; the first whose id exists is [`StoreError::DuplicateId`], or
/// whose name another user has [`StoreError::UsernameTaken`] (the caller's transaction then
/// rolls back).
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
        // The row is in place, so its id is free: a name held by another row is taken.
        if held_by_other(transaction, &user.username, id)? {
            return Err(taken(&user.username));
        }
    }
    Ok(())
}

/// Whether a user other than `rowid` is named `username`.
fn held_by_other(connection: &Connection, username: &str, rowid: i64) -> Result<bool, StoreError> {
    connection
        .prepare_cached(SELECT_OTHER_HOLDER)
        .and_then(|mut select| select.exists(params![username, rowid]))
        .map_err(storage("looking a username up"))
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

/// Gives `id` the name `username` and returns the user as it was:
/// [`StoreError::NotFound`] if there is no such user, [`StoreError::UsernameTaken`] if
/// another user has the name (the caller's transaction then rolls back). Its own name is no
/// change.
fn rename(transaction: &Transaction<'_>, id: u64, username: &str) -> Result<User, StoreError> {
    let before = username_of(transaction, id)?;
    if before == username {
        return Ok(User::new(id, before));
    }
    // `username_of` found the row, so the id is a rowid.
    let rowid = rowid(id).ok_or(StoreError::NotFound { id })?;
    if held_by_other(transaction, username, rowid)? {
        return Err(taken(username));
    }
    transaction
        .prepare_cached("UPDATE users SET username = ?2 WHERE id = ?1")
        .and_then(|mut update| update.execute(params![rowid, username]))
        .map_err(storage("updating a user"))?;
    Ok(User::new(id, before))
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
        let users = std::slice::from_ref(&user);
        self.check_first_without_journal(|store| unique::check_insert_batch(store, users))?;
        self.write(|transaction| insert_all(transaction, users))
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.check_first_without_journal(|store| unique::check_insert_batch(store, users))?;
        self.write(|transaction| insert_all(transaction, users))?;
        Ok(users.len() as u64)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        username_of(&self.connection, id).map(|username| User::new(id, username))
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
        let fail = storage("looking a username up");
        let mut select = self
            .connection
            .prepare_cached(SELECT_BY_NAME)
            .map_err(&fail)?;
        let ids = select
            .query_map(params![username, sql_limit(limit)], |row| {
                row.get::<_, i64>(0)
            })
            .map_err(&fail)?;
        ids.map(|id| {
            let id = id.map_err(&fail)?;
            u64::try_from(id)
                .map_err(|_| StoreError::storage("looking a username up", "a negative id"))
        })
        .collect()
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let fail = storage("listing shared usernames");
        let mut select = self
            .connection
            .prepare_cached(SELECT_SHARED)
            .map_err(&fail)?;
        let names = select
            .query_map([sql_limit(limit)], |row| row.get::<_, String>(0))
            .map_err(&fail)?;
        names.map(|name| name.map_err(&fail)).collect()
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
        // Every check comes before the one write: nothing to undo, journal or not.
        self.write(|transaction| rename(transaction, id, username))
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
        self.check_first_without_journal(|store| unique::check_update_batch(store, users))?;
        // Row by row in order: a rename frees its old name for the rows after it.
        self.write(|transaction| {
            users
                .iter()
                .try_for_each(|user| rename(transaction, user.id, &user.username).map(drop))
        })?;
        Ok(users.len() as u64)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        self.check_first_without_journal(|store| {
            ids.iter().try_for_each(|id| store.get(*id).map(drop))
        })?;
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
