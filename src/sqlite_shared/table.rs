//! [`SqlTable`]: the user table in SQLite over one connection, which both SQLite engines
//! open on their own storage.

use super::pragmas;
use super::statements::{PreparedConnection, Statements};
use super::{JournalMode, SqliteConfig};
use crate::error::StoreError;
use crate::limits;
use crate::store::UserStore;
use crate::unique;
use crate::user::User;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Statement};

const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, username TEXT NOT NULL)";
const INSERT: &str = "INSERT INTO users (id, username) VALUES (?1, ?2)";
const SELECT_ONE: &str = "SELECT username FROM users WHERE id = ?1";
const SELECT_PAGE: &str = "SELECT id, username FROM users WHERE id > ?1 ORDER BY id LIMIT ?2";
const UPDATE: &str = "UPDATE users SET username = ?2 WHERE id = ?1";
const DELETE: &str = "DELETE FROM users WHERE id = ?1";
const CREATE_COUNT_TABLE: &str = "CREATE TABLE IF NOT EXISTS user_count (rows INTEGER NOT NULL)";
const COUNT_ROWS: &str = "SELECT count(*) FROM user_count";
const FILL_COUNT: &str = "INSERT INTO user_count (rows) SELECT count(*) FROM users";
const COUNT: &str = "SELECT rows FROM user_count";
const SCAN_COUNT: &str = "SELECT count(*) FROM users";
const ADD_TO_COUNT: &str = "UPDATE user_count SET rows = rows + ?1";
/// The by-name index: on `username`, so on (`username`, `id`), which orders one name's
/// users by id. Not `UNIQUE`: a table written before names were unique may hold users that
/// share a name, and keeps them; every write checks the name instead ([`SELECT_OTHER_HOLDER`]).
const CREATE_NAME_INDEX: &str = "CREATE INDEX users_by_name ON users (username)";
const HAS_NAME_INDEX: &str =
    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'users_by_name'";
/// The names several users had when the index was built.
const CREATE_SHARED: &str =
    "CREATE TABLE IF NOT EXISTS shared_usernames (username TEXT PRIMARY KEY)";
const FILL_SHARED: &str = "INSERT OR IGNORE INTO shared_usernames \
     SELECT username FROM users GROUP BY username HAVING count(*) > 1";
const SELECT_SHARED: &str = "SELECT username FROM shared_usernames AS shared \
     WHERE (SELECT count(*) FROM users WHERE users.username = shared.username) > 1 \
     ORDER BY username LIMIT ?1";
const SELECT_BY_NAME: &str = "SELECT id FROM users WHERE username = ?1 ORDER BY id LIMIT ?2";
const SELECT_OTHER_HOLDER: &str = "SELECT 1 FROM users WHERE username = ?1 AND id != ?2 LIMIT 1";
const BEGIN: &str = "BEGIN";
const COMMIT: &str = "COMMIT";
const ROLLBACK: &str = "ROLLBACK";
/// The statements every store runs, prepared at open.
const STATEMENTS: [&str; 10] = [
    INSERT,
    SELECT_ONE,
    SELECT_BY_NAME,
    SELECT_OTHER_HOLDER,
    SELECT_PAGE,
    UPDATE,
    DELETE,
    BEGIN,
    COMMIT,
    ROLLBACK,
];
/// The statements of a store with its row count in the table `user_count`.
const COUNT_TABLE_STATEMENTS: [&str; 2] = [COUNT, ADD_TO_COUNT];

/// The user table in SQLite, `users(id INTEGER PRIMARY KEY, username TEXT NOT NULL)` with
/// the index `users_by_name` on `username`, on one connection. Every statement is prepared once, at open, and held with the connection
/// ([`PreparedConnection`]): queries (whose heap changes the IC discards) find them ready,
/// and no call pays for a statement cache.
///
/// The row count lives in a one-row table `user_count`, changed in the same transaction as
/// every insert and delete, so [`UserStore::count`] reads one row instead of scanning the
/// table. A database written before that table existed gets it at open, filled by one scan.
/// (A storage with a slot of its own for the count uses that instead: [`RowCountSlot`].)
pub struct SqlTable {
    db: PreparedConnection,
    config: SqliteConfig,
    row_count: RowCount,
}

/// A place beside the database that keeps the row count, written after every commit that
/// changes it. Only for storage where that write and the commit are atomic together: on the
/// IC both are writes of the same message, which a trap discards together.
pub trait RowCountSlot {
    /// The count stored, if any.
    fn load(&self) -> Option<u64>;
    /// Stores the count.
    fn store(&self, rows: u64) -> Result<(), StoreError>;
}

/// Where a [`SqlTable`] keeps its row count.
enum RowCount {
    /// In the table `user_count`, changed in the same transaction as every write.
    Table,
    /// In the heap, mirrored to `slot` after every commit.
    Slot {
        rows: u64,
        slot: Box<dyn RowCountSlot>,
    },
}

impl SqlTable {
    /// Sets up the table on `connection` (configured as `config`), with the row count in
    /// `slot` if there is one, else in the table `user_count`.
    ///
    /// Fails with [`StoreError::InvalidConfig`] if SQLite does not apply a setting as asked
    /// (for example WAL on storage that cannot hold it, or a page size other than the one an
    /// existing database was created with).
    pub fn open(
        connection: Connection,
        config: SqliteConfig,
        slot: Option<Box<dyn RowCountSlot>>,
    ) -> Result<Self, StoreError> {
        pragmas::apply(&connection, &config)?;
        connection
            .execute(CREATE_TABLE, [])
            .map_err(|error| StoreError::storage("creating the users table", error))?;
        pragmas::check_page_size(&connection, &config)?;
        ensure_name_index(&connection)?;
        let row_count = match slot {
            None => {
                ensure_row_count(&connection)?;
                RowCount::Table
            }
            Some(slot) => {
                let rows = match slot.load() {
                    Some(rows) => rows,
                    None => {
                        // Once, for a slot that was never set: a scan of the table.
                        let mut scan = connection
                            .prepare(SCAN_COUNT)
                            .map_err(|error| StoreError::storage("counting users", error))?;
                        let rows = query_count(&mut scan)?;
                        slot.store(rows)?;
                        rows
                    }
                };
                RowCount::Slot { rows, slot }
            }
        };
        let mut statements = STATEMENTS.to_vec();
        if matches!(row_count, RowCount::Table) {
            statements.extend(COUNT_TABLE_STATEMENTS);
        }
        Ok(Self {
            db: PreparedConnection::new(connection, &statements)?,
            config,
            row_count,
        })
    }

    /// Closes the connection, flushing what SQLite holds (a WAL is checkpointed).
    pub fn close(self) -> Result<(), StoreError> {
        self.db.close()
    }

    /// The configuration the store was opened with (and SQLite confirmed).
    pub fn config(&self) -> &SqliteConfig {
        &self.config
    }

    /// Checks the database's structure (`PRAGMA integrity_check`) and that the row count the
    /// store keeps is the number of rows in the table. Reads every page: an operator's check
    /// (after an upgrade, or in a test), not something to run in every message.
    pub fn check_integrity(&self) -> Result<(), StoreError> {
        let connection = self.db.connection();
        let fail = |error| StoreError::storage("checking integrity", error);
        let mut check = connection.prepare("PRAGMA integrity_check").map_err(fail)?;
        let problems: Vec<String> = check
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(fail)?
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        if problems != ["ok"] {
            return Err(StoreError::storage(
                "checking integrity",
                problems.join("; "),
            ));
        }
        let mut scan = connection.prepare(SCAN_COUNT).map_err(fail)?;
        let rows = query_count(&mut scan)?;
        let kept = self.count()?;
        if rows != kept {
            return Err(StoreError::storage(
                "checking integrity",
                format!("the table has {rows} rows, the kept count says {kept}"),
            ));
        }
        Ok(())
    }

    /// The SQLite library's version, as the engines report it.
    pub fn version() -> String {
        format!("SQLite {}", rusqlite::version())
    }

    /// Runs `write` inside one transaction: committed if it returns `Ok`, undone otherwise.
    /// `write` returns its value and how many rows it added (negative: removed), which goes
    /// into `user_count` in the same transaction.
    ///
    /// With a journal SQLite rolls back; with [`JournalMode::Off`] it cannot, so `write`
    /// reports the ids it inserted and they are deleted again before the commit.
    fn in_transaction<T>(
        &mut self,
        write: impl FnOnce(&Statements, &mut Vec<i64>) -> Result<(T, i64), StoreError>,
    ) -> Result<T, StoreError> {
        let statements = self.db.statements();
        run(statements, BEGIN, "beginning a transaction")?;
        let mut inserted_ids = Vec::new();
        let count_in_table = matches!(self.row_count, RowCount::Table);
        let written = write(statements, &mut inserted_ids).and_then(|(value, added)| {
            if count_in_table {
                add_to_count(statements, added)?;
            }
            Ok((value, added))
        });
        match written {
            Ok((value, added)) => match run(statements, COMMIT, "committing") {
                Ok(()) => {
                    self.count_committed(added)?;
                    Ok(value)
                }
                Err(error) => {
                    // Leave no transaction open behind a failed commit.
                    let _ = run(statements, ROLLBACK, "rolling back");
                    Err(error)
                }
            },
            // The error a caller sees is the one that stopped the write. If undoing it fails
            // too, the table may hold part of the write: that is a storage failure whatever
            // stopped the write (a canister traps on it, and the IC discards the message).
            Err(error) => match self.undo(&inserted_ids) {
                Ok(()) => Err(error),
                Err(undo_error) => Err(StoreError::Storage {
                    message: format!("{error}; undoing the write failed too: {undo_error}"),
                }),
            },
        }
    }

    /// Runs `write`, one statement that changes the table or fails having changed nothing,
    /// and keeps the row count. With the count in a slot the statement runs on its own
    /// (SQLite's autocommit, no BEGIN and COMMIT to run); with the count in the table it
    /// needs a transaction around both.
    fn one_statement<T>(
        &mut self,
        write: impl FnOnce(&Statements) -> Result<(T, i64), StoreError>,
    ) -> Result<T, StoreError> {
        if matches!(self.row_count, RowCount::Table) {
            return self.in_transaction(|statements, _| write(statements));
        }
        let (value, added) = write(self.db.statements())?;
        self.count_committed(added)?;
        Ok(value)
    }

    /// After a commit that added `added` rows (negative: removed): the count kept in a slot
    /// follows. (A count in the table changed inside the transaction.)
    fn count_committed(&mut self, added: i64) -> Result<(), StoreError> {
        if let RowCount::Slot { rows, slot } = &mut self.row_count {
            if added != 0 {
                *rows = rows.saturating_add_signed(added);
                slot.store(*rows)?;
            }
        }
        Ok(())
    }

    /// Without a journal SQLite cannot roll an update or delete back, so every id is looked
    /// up before the first write: an unknown one fails the batch while nothing has changed.
    /// With a journal this costs nothing: the transaction rolls back instead.
    fn require_existing_without_journal(
        &self,
        ids: impl Iterator<Item = u64>,
    ) -> Result<(), StoreError> {
        if self.config.journal_mode != JournalMode::Off {
            return Ok(());
        }
        for id in ids {
            if read_user(self.db.statements(), id)?.is_none() {
                return Err(StoreError::NotFound { id });
            }
        }
        Ok(())
    }

    /// Ends the transaction of a failed write, leaving the table as it was before it.
    fn undo(&self, inserted_ids: &[i64]) -> Result<(), StoreError> {
        let statements = self.db.statements();
        if self.db.connection().is_autocommit() {
            // SQLite rolled the transaction back itself (it does on out-of-memory, I/O and
            // disk-full errors): a ROLLBACK now would only fail with "no transaction is
            // active" and hide the error that stopped the write.
            return Ok(());
        }
        if self.config.journal_mode == JournalMode::Off {
            {
                let mut delete = statements.get(DELETE)?;
                for id in inserted_ids {
                    delete
                        .execute([id])
                        .map_err(|error| StoreError::storage("undoing a batch", error))?;
                }
            }
            run(statements, COMMIT, "committing an undone batch")
        } else {
            run(statements, ROLLBACK, "rolling back")
        }
    }
}

/// Runs a prepared statement without parameters or rows (`BEGIN`, `COMMIT`, `ROLLBACK`).
fn run(statements: &Statements, sql: &'static str, doing: &str) -> Result<(), StoreError> {
    statements
        .get(sql)?
        .execute([])
        .map(|_| ())
        .map_err(|error| StoreError::storage(doing, error))
}

/// Creates the by-name index if the database has none yet (a database written before names
/// were unique), recording first the names several users share. The index comes last, in
/// the same transaction: its presence says the rest is done.
fn ensure_name_index(connection: &Connection) -> Result<(), StoreError> {
    let fail = |error| StoreError::storage("building the by-name index", error);
    let present: i64 = connection
        .query_row(HAS_NAME_INDEX, [], |row| row.get(0))
        .map_err(fail)?;
    if present > 0 {
        return Ok(());
    }
    connection
        .execute_batch(&format!(
            "BEGIN; {CREATE_SHARED}; {FILL_SHARED}; {CREATE_NAME_INDEX}; COMMIT;"
        ))
        .map_err(|error| {
            let _ = connection.execute_batch("ROLLBACK");
            fail(error)
        })
}

/// Whether a user other than `rowid` is named `username`.
fn held_by_other(statements: &Statements, username: &str, rowid: i64) -> Result<bool, StoreError> {
    statements
        .get(SELECT_OTHER_HOLDER)?
        .exists(params![username, rowid])
        .map_err(|error| StoreError::storage("looking a username up", error))
}

/// Creates `user_count` if the database has none yet and fills it with one scan of `users`
/// (a database written before the count was kept).
fn ensure_row_count(connection: &Connection) -> Result<(), StoreError> {
    let fail = |error| StoreError::storage("setting up the row count", error);
    connection.execute(CREATE_COUNT_TABLE, []).map_err(fail)?;
    let count_rows: i64 = connection
        .query_row(COUNT_ROWS, [], |row| row.get(0))
        .map_err(fail)?;
    if count_rows == 0 {
        connection.execute(FILL_COUNT, []).map_err(fail)?;
    }
    Ok(())
}

/// The count that `count`, a query of one row and one column, returns.
fn query_count(count: &mut Statement<'_>) -> Result<u64, StoreError> {
    let rows: i64 = count
        .query_row([], |row| row.get(0))
        .map_err(|error| StoreError::storage("counting users", error))?;
    u64::try_from(rows).map_err(|_| StoreError::storage("counting users", "negative count"))
}

/// Adds `added` (negative: removes) to the row count, inside the caller's transaction.
fn add_to_count(statements: &Statements, added: i64) -> Result<(), StoreError> {
    if added == 0 {
        return Ok(());
    }
    statements
        .get(ADD_TO_COUNT)?
        .execute([added])
        .map(|_| ())
        .map_err(|error| StoreError::storage("updating the row count", error))
}

/// The rowid of an id that passed [`limits::check_id`] (which guarantees the conversion).
fn checked_rowid(id: u64) -> Result<i64, StoreError> {
    to_rowid(id).ok_or_else(|| StoreError::invalid_input(format!("id {id} is out of range")))
}

/// Converts a checked id to SQLite's rowid type. [`limits::check_id`] guarantees the
/// conversion; ids past it (only possible in lookups) map to `None`.
fn to_rowid(id: u64) -> Option<i64> {
    i64::try_from(id).ok()
}

/// Inserts one row with the INSERT statement; a primary-key clash is
/// [`StoreError::DuplicateId`].
fn insert_row(insert: &mut Statement<'_>, user: &User, rowid: i64) -> Result<(), StoreError> {
    match insert.execute(params![rowid, user.username]) {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if failure.code == ErrorCode::ConstraintViolation =>
        {
            Err(StoreError::DuplicateId { id: user.id })
        }
        Err(error) => Err(StoreError::storage("inserting a user", error)),
    }
}

fn read_user(statements: &Statements, id: u64) -> Result<Option<User>, StoreError> {
    let Some(rowid) = to_rowid(id) else {
        return Ok(None);
    };
    statements
        .get(SELECT_ONE)?
        .query_row([rowid], |row| row.get::<_, String>(0))
        .optional()
        .map(|username| username.map(|username| User { id, username }))
        .map_err(|error| StoreError::storage("reading a user", error))
}

impl UserStore for SqlTable {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        let rowid = checked_rowid(user.id)?;
        // Both clashes are found before the INSERT writes anything: nothing to undo. A taken
        // name is an error only once the id is known to be free (the id is checked first).
        if held_by_other(self.db.statements(), &user.username, rowid)? {
            return Err(match read_user(self.db.statements(), user.id)? {
                Some(_) => StoreError::DuplicateId { id: user.id },
                None => unique::taken(&user.username),
            });
        }
        self.one_statement(|statements| {
            insert_row(&mut *statements.get(INSERT)?, &user, rowid)?;
            Ok(((), 1))
        })
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.in_transaction(|statements, inserted_ids| {
            let mut insert = statements.get(INSERT)?;
            for user in users {
                let rowid = checked_rowid(user.id)?;
                insert_row(&mut insert, user, rowid)?;
                inserted_ids.push(rowid);
                // The batch's names are distinct (`check_batch`): another holder is a row
                // the table had before.
                if held_by_other(statements, &user.username, rowid)? {
                    return Err(unique::taken(&user.username));
                }
            }
            Ok((users.len() as u64, users.len() as i64))
        })
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        read_user(self.db.statements(), id)?.ok_or(StoreError::NotFound { id })
    }

    fn get_by_name(&self, username: &str) -> Result<User, StoreError> {
        match self.ids_named(username, 1)?.first() {
            Some(id) => Ok(User::new(*id, username)),
            None => Err(StoreError::UsernameNotFound {
                username: username.to_string(),
            }),
        }
    }

    fn ids_named(&self, username: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        let fail = |error| StoreError::storage("looking a username up", error);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut select = self.db.statements().get(SELECT_BY_NAME)?;
        let ids = select
            .query_map(params![username, limit], |row| row.get::<_, i64>(0))
            .map_err(fail)?;
        ids.map(|id| {
            let rowid = id.map_err(fail)?;
            u64::try_from(rowid)
                .map_err(|_| fail(rusqlite::Error::IntegralValueOutOfRange(0, rowid)))
        })
        .collect()
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let fail = |error| StoreError::storage("listing shared usernames", error);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut select = self.db.connection().prepare(SELECT_SHARED).map_err(fail)?;
        let names = select
            .query_map([limit], |row| row.get::<_, String>(0))
            .map_err(fail)?;
        names.map(|name| name.map_err(fail)).collect()
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        limits::check_page_size(limit)?;
        let after_rowid = match after {
            None => -1,
            Some(id) => match to_rowid(id) {
                Some(rowid) => rowid,
                None => return Ok(Vec::new()),
            },
        };
        let mut select = self.db.statements().get(SELECT_PAGE)?;
        let rows = select
            .query_map(params![after_rowid, limit], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|error| StoreError::storage("reading a page", error))?;
        rows.map(|row| {
            let (rowid, username) =
                row.map_err(|error| StoreError::storage("reading a page", error))?;
            let id = u64::try_from(rowid)
                .map_err(|_| StoreError::storage("reading a page", "negative id in table"))?;
            Ok(User { id, username })
        })
        .collect()
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        let statements = self.db.statements();
        let previous = read_user(statements, id)?.ok_or(StoreError::NotFound { id })?;
        let rowid = to_rowid(id).ok_or(StoreError::NotFound { id })?;
        if previous.username == username {
            return Ok(previous);
        }
        if held_by_other(statements, username, rowid)? {
            return Err(unique::taken(username));
        }
        statements
            .get(UPDATE)?
            .execute(params![rowid, username])
            .map_err(|error| StoreError::storage("updating a user", error))?;
        Ok(previous)
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        let Some(rowid) = to_rowid(id) else {
            return Err(StoreError::NotFound { id });
        };
        // A read, then a plain DELETE: `DELETE ... RETURNING` builds an ephemeral table on
        // every execution, which costs more than the second statement.
        let user = read_user(self.db.statements(), id)?.ok_or(StoreError::NotFound { id })?;
        self.one_statement(|statements| {
            statements
                .get(DELETE)?
                .execute([rowid])
                .map_err(|error| StoreError::storage("deleting a user", error))?;
            Ok((user, -1))
        })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        // Without a journal nothing could roll a failed row back: every row is checked
        // first, in the order the transaction applies them, and not again inside it.
        let checked_first = self.config.journal_mode == JournalMode::Off;
        if checked_first {
            unique::check_update_batch(self, users)?;
        }
        self.in_transaction(|statements, _| {
            let mut update = statements.get(UPDATE)?;
            for user in users {
                // One by one, in order: a name is taken if another user has it now.
                let current =
                    read_user(statements, user.id)?.ok_or(StoreError::NotFound { id: user.id })?;
                if current.username == user.username {
                    continue;
                }
                let rowid = to_rowid(user.id).ok_or(StoreError::NotFound { id: user.id })?;
                if !checked_first && held_by_other(statements, &user.username, rowid)? {
                    return Err(unique::taken(&user.username));
                }
                update
                    .execute(params![rowid, user.username])
                    .map_err(|error| StoreError::storage("updating a user", error))?;
            }
            Ok((users.len() as u64, 0))
        })
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        self.require_existing_without_journal(ids.iter().copied())?;
        self.in_transaction(|statements, _| {
            let mut delete = statements.get(DELETE)?;
            for id in ids {
                let rowid = to_rowid(*id).ok_or(StoreError::NotFound { id: *id })?;
                let changed = delete
                    .execute([rowid])
                    .map_err(|error| StoreError::storage("deleting a user", error))?;
                if changed == 0 {
                    return Err(StoreError::NotFound { id: *id });
                }
            }
            Ok((ids.len() as u64, -(ids.len() as i64)))
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        if let RowCount::Slot { rows, .. } = &self.row_count {
            return Ok(*rows);
        }
        query_count(&mut *self.db.statements().get(COUNT)?)
    }
}
