//! Opens the preloaded tables exactly as the canisters open theirs: one `MemoryManager` over
//! stable memory, the B-tree on its virtual memory, SQLite through ic-wasi-polyfill and the
//! stable-memory SQLite engine on its virtual memory, each SQLite with its canister's default
//! configuration and the journal mode of the bench.
//!
//! Nothing here runs at install: canbench loads the stable-memory image after install, so
//! the memory manager and the file system are set up by the first bench or seeding call.

use crate::tables::TableSize;
use ic_stable_structures::memory_manager::{MemoryManager, VirtualMemory};
use ic_stable_structures::DefaultMemoryImpl;
use std::cell::RefCell;
use std::collections::BTreeSet;
use userstore::layout;
use userstore::sqlite::stable_memory;
use userstore::{
    BTreeStore, JournalMode, PageTreeStore, SqliteConfig, SqliteStore, StableSqliteStore,
    StoreError, UserStore,
};

/// The engine (and journal mode) a bench measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// `BTreeStore`.
    BTree,
    /// `SqliteStore` with this journal mode.
    Sqlite(JournalMode),
    /// `StableSqliteStore` with this journal mode.
    StableSqlite(JournalMode),
    /// `PageTreeStore`.
    PageTree,
}

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());
    static FILE_SYSTEM_READY: RefCell<bool> = const { RefCell::new(false) };
    static MOUNTED: RefCell<BTreeSet<&'static str>> = const { RefCell::new(BTreeSet::new()) };
}

/// Opens the B-tree of `size`.
pub fn open_btree(size: TableSize) -> BTreeStore<VirtualMemory<DefaultMemoryImpl>> {
    BTreeStore::open(MEMORY_MANAGER.with(|manager| manager.get(size.btree_memory_id())))
        .expect("the B-tree opens")
}

/// Opens the SQLite database of `size` with the canisters' default configuration and
/// `journal_mode`.
pub fn open_sqlite(size: TableSize, journal_mode: JournalMode) -> Result<SqliteStore, StoreError> {
    MEMORY_MANAGER.with(|manager| {
        // Each flag is set only once its step succeeded, so a failed call retries it.
        if !FILE_SYSTEM_READY.with(|ready| *ready.borrow()) {
            stable_memory::init_file_system(manager, layout::FILE_SYSTEM_MEMORY_IDS)?;
            FILE_SYSTEM_READY.with(|ready| *ready.borrow_mut() = true);
        }
        let path = size.sqlite_path();
        if !MOUNTED.with(|mounted| mounted.borrow().contains(path)) {
            stable_memory::mount_database(manager, path, size.sqlite_memory_id())?;
            MOUNTED.with(|mounted| mounted.borrow_mut().insert(path));
        }
        Ok(())
    })?;
    SqliteStore::open(
        size.sqlite_path(),
        SqliteConfig::with_journal_mode(journal_mode),
    )
}

/// Opens the stable-memory SQLite database of `size` with the canister's default
/// configuration and `journal_mode`.
pub fn open_stable_sqlite(
    size: TableSize,
    journal_mode: JournalMode,
) -> Result<StableSqliteStore, StoreError> {
    let memory = MEMORY_MANAGER.with(|manager| manager.get(size.stable_sqlite_memory_id()));
    let config = StableSqliteStore::config_with_journal_mode(journal_mode);
    StableSqliteStore::open(size.stable_sqlite_name(), memory, config)
}

/// Opens the page tree of `size` on its virtual memory (the page-tree canister keeps its
/// table in a region of stable memory instead; the pages of the table are the same 64 KiB
/// pages, as a virtual memory's buckets are whole Wasm pages).
pub fn open_page_tree(
    size: TableSize,
) -> Result<PageTreeStore<VirtualMemory<DefaultMemoryImpl>>, StoreError> {
    PageTreeStore::open(MEMORY_MANAGER.with(|manager| manager.get(size.page_tree_memory_id())))
}

/// Opens the table of `size` in `engine`.
pub fn open(engine: EngineKind, size: TableSize) -> Result<Box<dyn UserStore>, StoreError> {
    Ok(match engine {
        EngineKind::BTree => Box::new(open_btree(size)),
        EngineKind::Sqlite(journal_mode) => Box::new(open_sqlite(size, journal_mode)?),
        EngineKind::StableSqlite(journal_mode) => Box::new(open_stable_sqlite(size, journal_mode)?),
        EngineKind::PageTree => Box::new(open_page_tree(size)?),
    })
}

/// Bytes of stable memory `engine`'s table of `size` occupies: its virtual memory's size
/// (the B-tree's, the SQLite database file's, or the stable-memory SQLite engine's: its
/// header, file and journal-free tail).
pub fn table_bytes(engine: EngineKind, size: TableSize) -> u64 {
    use ic_stable_structures::Memory;
    let memory_id = match engine {
        EngineKind::BTree => size.btree_memory_id(),
        EngineKind::Sqlite(_) => size.sqlite_memory_id(),
        EngineKind::StableSqlite(_) => size.stable_sqlite_memory_id(),
        EngineKind::PageTree => size.page_tree_memory_id(),
    };
    // Virtual memories grow in 64 KiB Wasm pages.
    MEMORY_MANAGER.with(|manager| manager.get(memory_id).size() * 65_536)
}
