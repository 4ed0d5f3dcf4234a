//! The [`StableSqliteStore`] itself: [`SqliteStore`]'s table on a connection through the
//! stable-memory VFS, with the row count in the VFS header.

use super::page_cache;
use super::vfs::{self, FileHandle};
use crate::describe::{Engine, EngineInfo};
use crate::error::StoreError;
use crate::sqlite::{JournalMode, LockingMode, RowCountSlot, SqliteConfig, SqliteStore};
use crate::store::UserStore;
use crate::user::User;
use ic_stable_structures::Memory;
use rusqlite::{Connection, OpenFlags};

/// The user table in SQLite on a stable-memory `Memory` (see the [module](super)).
pub struct StableSqliteStore {
    table: SqliteStore,
    file: FileHandle,
}

impl StableSqliteStore {
    /// The configuration a canister gets when it asks for none:
    /// [`SqliteConfig::for_stable_sqlite`] (MEMORY journal, 4 KiB pages, exclusive locking,
    /// a 160 MiB page cache).
    pub fn default_config() -> SqliteConfig {
        SqliteConfig::for_stable_sqlite()
    }

    /// Checks `config` for this engine: [`SqliteConfig::validate`], and a journal and
    /// locking mode that make sense on stable memory.
    pub fn check_config(config: &SqliteConfig) -> Result<(), StoreError> {
        config.validate()?;
        match config.journal_mode {
            JournalMode::Memory | JournalMode::Off => {}
            other => {
                return Err(StoreError::invalid_config(format!(
                    "journal_mode {other:?} keeps a journal file, which this engine does not \
                     have: a message is atomic on the IC, so the journal only serves ROLLBACK \
                     inside a message, and Memory keeps it in the heap (Off keeps none)"
                )))
            }
        }
        if config.locking_mode != LockingMode::Exclusive {
            return Err(StoreError::invalid_config(
                "locking_mode Normal would rewrite page 1 at every commit to tell other \
                 connections the file changed; a canister's database has one connection, \
                 so this engine needs Exclusive",
            ));
        }
        Ok(())
    }

    /// Opens (or creates) the table in `memory`, registered with the VFS as the file
    /// `name` (several stores can live side by side under different names), with `config`.
    pub fn open(
        name: &str,
        memory: impl Memory + 'static,
        config: SqliteConfig,
    ) -> Result<Self, StoreError> {
        Self::check_config(&config)?;
        let vfs_error = |error: vfs::VfsError| StoreError::storage("opening the database", error);
        vfs::register_vfs().map_err(vfs_error)?;
        let file = vfs::register_file(name, Box::new(memory)).map_err(vfs_error)?;
        // SQLite creates the connection's page cache while the store opens (when it reads the
        // page size from page 1), so the cache is the engine's own (see `page_cache`).
        let table = page_cache::for_stable_engine(|| {
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let connection = Connection::open_with_flags_and_vfs(name, flags, vfs::VFS_NAME)
                .map_err(|error| StoreError::storage("opening the database", error))?;
            // SQLite then writes pages only at COMMIT, however large the transaction.
            connection
                .pragma_update(None, "cache_spill", false)
                .map_err(|error| StoreError::storage("setting cache_spill", error))?;
            let slot = Box::new(HeaderSlot(file.clone()));
            SqliteStore::with_connection_and_count(connection, config, Some(slot))
        })?;
        Ok(Self { table, file })
    }

    /// Closes the connection, keeping the file registered for a later [`Self::open`].
    pub fn close(self) -> Result<(), StoreError> {
        self.table.close()
    }

    /// The configuration the store was opened with (and SQLite confirmed).
    pub fn config(&self) -> &SqliteConfig {
        self.table.config()
    }

    /// Bytes of the Memory the store uses: header, database file and the unused tail of the
    /// last 64 KiB Wasm page.
    pub fn memory_bytes(&self) -> u64 {
        self.file.memory_bytes()
    }

    /// The database file and its write counters.
    pub fn file(&self) -> &FileHandle {
        &self.file
    }
}

/// The row count in the VFS header's application value.
struct HeaderSlot(FileHandle);

impl RowCountSlot for HeaderSlot {
    fn load(&self) -> Option<u64> {
        self.0.app_value()
    }

    fn store(&self, rows: u64) -> Result<(), StoreError> {
        self.0
            .set_app_value(rows)
            .map_err(|error| StoreError::storage("storing the row count", error))
    }
}

impl UserStore for StableSqliteStore {
    fn insert(&mut self, user: User) -> Result<(), StoreError> {
        self.table.insert(user)
    }

    fn insert_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        self.table.insert_batch(users)
    }

    fn get(&self, id: u64) -> Result<User, StoreError> {
        self.table.get(id)
    }

    fn page(&self, after: Option<u64>, limit: u32) -> Result<Vec<User>, StoreError> {
        self.table.page(after, limit)
    }

    fn update_username(&mut self, id: u64, username: &str) -> Result<User, StoreError> {
        self.table.update_username(id, username)
    }

    fn delete(&mut self, id: u64) -> Result<User, StoreError> {
        self.table.delete(id)
    }

    fn update_batch(&mut self, users: &[User]) -> Result<u64, StoreError> {
        self.table.update_batch(users)
    }

    fn delete_batch(&mut self, ids: &[u64]) -> Result<u64, StoreError> {
        self.table.delete_batch(ids)
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.table.count()
    }

    fn describe(&self) -> EngineInfo {
        EngineInfo {
            engine: Engine::StableSqlite,
            ..self.table.describe()
        }
    }
}
