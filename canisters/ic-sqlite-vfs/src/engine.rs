//! [`IcSqliteVfsStore`]: the user table in SQLite through ic-sqlite-vfs 2.1, set up as its
//! README shows: its own `MemoryManager` (`init_strict`) over the canister's stable memory,
//! one database in one virtual memory (`DbHandle::init`), its schema by `migrate`, writes in
//! `update` closures (one transaction each, rolled back when the closure fails), reads in
//! `query` closures on its read-only connection, statements from its `prepare_cached`.
//! Everything else (journal MEMORY, 16 KiB pages, a 32 MiB cache, exclusive locking) the
//! library sets itself; it takes no configuration.
//!
//! The table and the row count are the same as userstore's SQLite engines'
//! (`users(id INTEGER PRIMARY KEY, username TEXT NOT NULL)` and a one-row `user_count`
//! changed in the same transaction as every insert and delete), so the two differ only in
//! what is under SQLite.
//!
//! The library's memory manager is a fork of ic-stable-structures' with the same stable
//! layout: it shares the header at page 0 with the canister's own manager, which holds the
//! settings and writes nothing once this engine is open
//! ([`MemoryAccess::OwnManager`]).

use candid::CandidType;
use ic_sqlite_vfs::db::migrate::Migration;
use ic_sqlite_vfs::db::UpdateConnection;
use ic_sqlite_vfs::{params, DbError, DbHandle, DefaultMemoryImpl, MemoryId, MemoryManager};
use serde::{Deserialize, Serialize};
use userstore::engine::{BatchWrite, EngineStorage, MemoryAccess, StorageEngine, WriteCost};
use userstore::{limits, StoreError, User, UserStore};

/// ic-sqlite-vfs's configuration: none (the library sets its own pragmas).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IcSqliteVfsConfig {}

/// The schema, as the library's migrations keep it. Version 2 adds the by-name index of
/// userstore's SQLite engines (not `UNIQUE`: a database written by version 1 may hold users
/// that share a name; they are recorded in `shared_usernames` and every write checks the
/// name instead).
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL); \
              CREATE TABLE user_count (rows INTEGER NOT NULL); \
              INSERT INTO user_count (rows) VALUES (0);",
    },
    Migration {
        version: 2,
        sql: "CREATE TABLE shared_usernames (username TEXT PRIMARY KEY); \
              INSERT INTO shared_usernames \
                  SELECT username FROM users GROUP BY username HAVING count(*) > 1; \
              CREATE INDEX users_by_name ON users (username);",
    },
];

const INSERT: &str = "INSERT INTO users (id, username) VALUES (?1, ?2)";
const SELECT_ONE: &str = "SELECT username FROM users WHERE id = ?1";
const SELECT_PAGE: &str = "SELECT id, username FROM users WHERE id > ?1 ORDER BY id LIMIT ?2";
const UPDATE: &str = "UPDATE users SET username = ?2 WHERE id = ?1";
const DELETE: &str = "DELETE FROM users WHERE id = ?1";
const SELECT_BY_NAME: &str = "SELECT id FROM users WHERE username = ?1 ORDER BY id LIMIT ?2";
const SELECT_OTHER_HOLDER: &str = "SELECT 1 FROM users WHERE username = ?1 AND id != ?2 LIMIT 1";
const SELECT_SHARED: &str = "SELECT username FROM shared_usernames AS shared \
     WHERE (SELECT count(*) FROM users WHERE users.username = shared.username) > 1 \
     ORDER BY username LIMIT ?1";
const COUNT: &str = "SELECT rows FROM user_count";
const ADD_TO_COUNT: &str = "UPDATE user_count SET rows = rows + ?1";

/// The user table in one ic-sqlite-vfs database.
pub struct IcSqliteVfsStore {
    db: DbHandle,
}

impl IcSqliteVfsStore {
    /// Opens (or creates) the database in the virtual memory `memory_id` of the library's
    /// memory manager over the canister's stable memory.
    pub fn open(memory_id: u8) -> Result<Self, StoreError> {
        let fail = |doing: &'static str| move |error| StoreError::storage(doing, error);
        let manager =
            MemoryManager::init_strict(DefaultMemoryImpl::default()).map_err(|error| {
                StoreError::storage("opening the memory manager", format!("{error:?}"))
            })?;
        let db = DbHandle::init(manager.get(MemoryId::new(memory_id)))
            .map_err(fail("opening the database"))?;
        db.migrate(MIGRATIONS)
            .map_err(fail("creating the tables"))?;
        Ok(Self { db })
    }

    /// Runs `write` in one transaction: committed if it returns `Ok`, rolled back otherwise.
    fn write<T>(
        &self,
        write: impl FnOnce(&mut UpdateConnection<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut failure = None;
        let outcome = self.db.update(|connection| {
            write(connection).map_err(|error| {
                failure = Some(error);
                // Any error rolls the transaction back; the store's own is kept above.
                DbError::NotFound
            })
        });
        match (outcome, failure) {
            (Ok(value), _) => Ok(value),
            (Err(_), Some(error)) => Err(error),
            (Err(error), None) => Err(StoreError::storage("committing", error)),
        }
    }

    /// Runs `read` on the library's read-only connection.
    fn read<T>(
        &self,
        read: impl FnOnce(&ic_sqlite_vfs::db::connection::Connection) -> Result<T, DbError>,
        doing: &str,
    ) -> Result<T, StoreError> {
        self.db
            .query(read)
            .map_err(|error| StoreError::storage(doing, error))
    }
}

/// A checked id as SQLite's rowid ([`limits::check_id`] keeps ids within `i64`).
fn rowid(id: u64) -> Option<i64> {
    i64::try_from(id).ok()
}

/// A database error while `doing`, as a storage failure.
fn storage(doing: &'static str) -> impl Fn(DbError) -> StoreError {
    move |error| StoreError::storage(doing, error)
}

fn insert_row(connection: &UpdateConnection<'_>, user: &User) -> Result<(), StoreError> {
    let id = rowid(user.id).ok_or(StoreError::NotFound { id: user.id })?;
    let mut insert = connection
        .prepare_cached(INSERT)
        .map_err(storage("preparing"))?;
    match insert.execute(params![id, user.username.as_str()]) {
        Ok(()) => Ok(()),
        Err(DbError::Constraint(_)) => Err(StoreError::DuplicateId { id: user.id }),
        Err(error) => Err(StoreError::storage("inserting a user", error)),
    }
}

fn add_to_count(connection: &UpdateConnection<'_>, added: i64) -> Result<(), StoreError> {
    connection
        .prepare_cached(ADD_TO_COUNT)
        .and_then(|mut statement| statement.execute(params![added]))
        .map_err(storage("updating the row count"))
}

fn read_username(
    connection: &ic_sqlite_vfs::db::connection::Connection,
    id: u64,
) -> Result<Option<String>, DbError> {
    let Some(id) = rowid(id) else {
        return Ok(None);
    };
    connection
        .prepare_cached(SELECT_ONE)?
        .query_optional(params![id], |row| row.get::<String>(0))
}

/// [`StoreError::UsernameTaken`] if a user other than `id` is named `username`.
fn refuse_taken(
    connection: &UpdateConnection<'_>,
    username: &str,
    id: u64,
) -> Result<(), StoreError> {
    let row = rowid(id).ok_or(StoreError::NotFound { id })?;
    let held = connection
        .prepare_cached(SELECT_OTHER_HOLDER)
        .and_then(|mut statement| {
            statement.query_optional(params![username, row], |row| row.get::<i64>(0))
        })
        .map_err(storage("looking a username up"))?;
    match held {
        Some(_) => Err(StoreError::UsernameTaken {
            username: username.to_string(),
        }),
        None => Ok(()),
    }
}

/// Changes the username of `id` (one by one: a name another user has now is refused);
/// returns the one it had. [`StoreError::NotFound`] if there is no such user.
fn rename(
    connection: &UpdateConnection<'_>,
    id: u64,
    username: &str,
) -> Result<String, StoreError> {
    let previous = read_username(connection, id)
        .map_err(storage("reading a user"))?
        .ok_or(StoreError::NotFound { id })?;
    if previous == username {
        return Ok(previous);
    }
    refuse_taken(connection, username, id)?;
    let row = rowid(id).ok_or(StoreError::NotFound { id })?;
    connection
        .prepare_cached(UPDATE)
        .and_then(|mut statement| statement.execute(params![row, username]))
        .map_err(storage("updating a user"))?;
    match connection.changes() {
        0 => Err(StoreError::NotFound { id }),
        _ => Ok(previous),
    }
}

/// Deletes `id`; [`StoreError::NotFound`] if there is no such user.
fn remove(connection: &UpdateConnection<'_>, id: u64) -> Result<(), StoreError> {
    let row = rowid(id).ok_or(StoreError::NotFound { id })?;
    connection
        .prepare_cached(DELETE)
        .and_then(|mut statement| statement.execute(params![row]))
        .map_err(storage("deleting a user"))?;
    match connection.changes() {
        0 => Err(StoreError::NotFound { id }),
        _ => Ok(()),
    }
}

impl UserStore for IcSqliteVfsStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        limits::check_user(&user)?;
        self.write(|connection| {
            insert_row(connection, &user)?;
            refuse_taken(connection, &user.username, user.id)?;
            add_to_count(connection, 1)
        })
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.write(|connection| {
            for user in users {
                insert_row(connection, user)?;
                refuse_taken(connection, &user.username, user.id)?;
            }
            add_to_count(connection, users.len() as i64)?;
            Ok(users.len() as u64)
        })
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.read(|connection| read_username(connection, id), "reading a user")?
            .map(|username| User { id, username })
            .ok_or(StoreError::NotFound { id })
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
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let ids = self.read(
            |connection| {
                connection
                    .prepare_cached(SELECT_BY_NAME)?
                    .query_all(params![username, limit], |row| row.get::<i64>(0))
            },
            "looking a username up",
        )?;
        ids.into_iter()
            .map(|id| {
                u64::try_from(id).map_err(|_| {
                    StoreError::storage("looking a username up", "negative id in table")
                })
            })
            .collect()
    }

    fn shared_usernames(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(
            |connection| {
                connection
                    .prepare_cached(SELECT_SHARED)?
                    .query_all(params![limit], |row| row.get::<String>(0))
            },
            "listing shared usernames",
        )
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        limits::check_page_size(limit)?;
        let after = match after {
            None => -1,
            Some(id) => match rowid(id) {
                Some(row) => row,
                None => return Ok(Vec::new()),
            },
        };
        let rows = self.read(
            |connection| {
                connection
                    .prepare_cached(SELECT_PAGE)?
                    .query_all(params![after, i64::from(limit)], |row| {
                        Ok((row.get::<i64>(0)?, row.get::<String>(1)?))
                    })
            },
            "reading a page",
        )?;
        rows.into_iter()
            .map(|(id, username)| {
                let id = u64::try_from(id)
                    .map_err(|_| StoreError::storage("reading a page", "negative id in table"))?;
                Ok(User { id, username })
            })
            .collect()
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        limits::check_username(username)?;
        self.write(|connection| {
            let previous = rename(connection, id, username)?;
            Ok(User {
                id,
                username: previous,
            })
        })
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.write(|connection| {
            let username = read_username(connection, id)
                .map_err(storage("reading a user"))?
                .ok_or(StoreError::NotFound { id })?;
            remove(connection, id)?;
            add_to_count(connection, -1)?;
            Ok(User { id, username })
        })
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        limits::check_batch(users)?;
        self.write(|connection| {
            for user in users {
                rename(connection, user.id, &user.username)?;
            }
            Ok(users.len() as u64)
        })
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        limits::check_id_batch(ids)?;
        self.write(|connection| {
            for id in ids {
                remove(connection, *id)?;
            }
            add_to_count(connection, -(ids.len() as i64))?;
            Ok(ids.len() as u64)
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        let rows = self.read(
            |connection| {
                connection
                    .prepare_cached(COUNT)?
                    .query_scalar::<i64>(params![])
            },
            "counting users",
        )?;
        u64::try_from(rows).map_err(|_| StoreError::storage("counting users", "negative count"))
    }
}

impl StorageEngine for IcSqliteVfsStore {
    const NAME: &'static str = "IcSqliteVfs";

    const MEMORY_ACCESS: MemoryAccess = MemoryAccess::OwnManager;

    type Config = IcSqliteVfsConfig;

    fn settle_config(
        _requested: Option<IcSqliteVfsConfig>,
        _current: Option<IcSqliteVfsConfig>,
    ) -> Result<IcSqliteVfsConfig, StoreError> {
        Ok(IcSqliteVfsConfig {})
    }

    fn write_cost(write: BatchWrite) -> WriteCost {
        // About twice the worst measured under the IC's current meter (per_call_results.yml;
        // this crate's test holds every bound above every measured call). The fixed part is
        // the dearest one-row insert: SQLite's pages of the table, its name index and its
        // journal, each 64 KiB page of stable memory touched costs 80,000 and 80,000 more if
        // written (docs/metering.md §6). The per-row parts are the 1,000-row batches with
        // names scattered over the index: each row reaches pages of its own.
        let per_row = match write {
            BatchWrite::Insert => 2_300_000,
            BatchWrite::Update => 1_800_000,
            BatchWrite::Delete => 1_000_000,
        };
        WriteCost {
            per_batch: 160_000_000,
            per_row,
        }
    }

    fn open(storage: EngineStorage<'_>, _config: IcSqliteVfsConfig) -> Result<Self, StoreError> {
        let memory_id = storage.memory_id.ok_or_else(|| {
            StoreError::storage(
                "opening ic-sqlite-vfs",
                "the canister gave no virtual memory id",
            )
        })?;
        Self::open(memory_id)
    }

    fn config(&self) -> IcSqliteVfsConfig {
        IcSqliteVfsConfig {}
    }

    fn version(&self) -> String {
        "ic-sqlite-vfs 2.1.0 (SQLite 3.53.4)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::IcSqliteVfsStore;
    use measured_writes::{check_bounds, WriteKind, RESULTS};
    use userstore::budget::UPDATE_INSTRUCTION_LIMIT;
    use userstore::engine::{BatchWrite, StorageEngine};
    use userstore::limits::MAX_BATCH_SIZE;

    fn batch_write(kind: WriteKind) -> BatchWrite {
        match kind {
            WriteKind::Insert => BatchWrite::Insert,
            WriteKind::Update => BatchWrite::Update,
            WriteKind::Delete => BatchWrite::Delete,
        }
    }

    /// The bounds cover every write of this engine measured in `per_call_results.yml`, under
    /// both meters and on both table states: a bound below a measured call would let a
    /// configured instruction budget be overrun.
    #[test]
    fn every_bound_covers_every_write_measured() {
        let checked = check_bounds(RESULTS, |measured| {
            if measured.engine != "ic_sqlite_vfs" {
                return None;
            }
            let cost = IcSqliteVfsStore::write_cost(batch_write(measured.kind));
            Some(cost.per_batch + cost.per_row * measured.rows)
        })
        .expect("every bound covers its measured writes");
        assert!(checked > 30, "only {checked} writes of the peer found");
    }

    /// The largest batch the API takes fits under the IC's update limit.
    #[test]
    fn the_largest_batch_fits_under_the_update_limit() {
        for write in BatchWrite::ALL {
            let fit = IcSqliteVfsStore::write_cost(write).rows_that_fit(UPDATE_INSTRUCTION_LIMIT);
            assert!(fit >= MAX_BATCH_SIZE as u64, "{write:?}: {fit}");
        }
    }
}
