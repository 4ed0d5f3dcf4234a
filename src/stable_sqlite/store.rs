//! The [`StableSqliteStore`] itself: the shared SQL table on a connection through the
//! stable-memory VFS, with the row count in the VFS header.

use super::vfs::{self, FileHandle};
use crate::error::StoreError;
use crate::sqlite_shared::{
    delegate_user_store, page_cache, JournalMode, LockingMode, RowCountSlot, SqlTable, SqliteConfig,
};
use ic_stable_structures::Memory;
use rusqlite::{Connection, OpenFlags};

/// The user table in SQLite on a stable-memory `Memory` (see the [module](super)).
pub struct StableSqliteStore {
    table: SqlTable,
    file: FileHandle,
}

impl StableSqliteStore {
    /// The configuration a canister gets when it asks for none: SQLite's
    /// [default](SqliteConfig::default) (MEMORY journal, exclusive locking) with 16 KiB pages
    /// and a page cache of 10,240 of them, 160 MiB of heap, which holds a 1,000,000-row table
    /// whole.
    ///
    /// 16 KiB, not SQLite's 4 KiB: the IC charges every 64 KiB page a message touches
    /// (docs/metering.md §6), and larger pages make the tree shallower and its cache buffers
    /// fewer, so a call touches fewer of them. The sweep behind the choice, under both
    /// meters, is `docs/page_sizes.yml` (docs/floor.md). An existing database keeps the page
    /// size it was created with: its recorded configuration wins over this one.
    pub fn default_config() -> SqliteConfig {
        SqliteConfig {
            page_size: 16_384,
            cache_size_pages: 10_240,
            ..SqliteConfig::default()
        }
    }

    /// [`StableSqliteStore::default_config`] with another journal mode.
    pub fn config_with_journal_mode(journal_mode: JournalMode) -> SqliteConfig {
        SqliteConfig {
            journal_mode,
            ..Self::default_config()
        }
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
        Self::open_boxed(name, Box::new(memory), config)
    }

    /// [`StableSqliteStore::open`] with the memory already boxed.
    pub fn open_boxed(
        name: &str,
        memory: Box<dyn Memory>,
        config: SqliteConfig,
    ) -> Result<Self, StoreError> {
        Self::check_config(&config)?;
        let vfs_error = |error: vfs::VfsError| StoreError::storage("opening the database", error);
        vfs::register_vfs().map_err(vfs_error)?;
        let file = vfs::register_file(name, memory).map_err(vfs_error)?;
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
            SqlTable::open(connection, config, Some(slot))
        })?;
        Ok(Self { table, file })
    }

    /// Closes the connection, keeping the file registered for a later [`Self::open`].
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

delegate_user_store!(StableSqliteStore, table);
