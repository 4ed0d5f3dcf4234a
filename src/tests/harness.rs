//! Every engine configuration under test, behind one interface that can also reopen the
//! store from its storage (what a canister upgrade does).

use crate::sqlite_shared::{JournalMode, SqliteConfig};
use crate::SqliteStore;
use crate::{BTreeStore, PageTreeStore, PerRequestPageTree, StableSqliteStore, UserStore};
use ic_stable_structures::VectorMemory;
use tempfile::TempDir;

/// A store under test.
pub trait Harness {
    fn name(&self) -> String;
    fn store(&mut self) -> &mut dyn UserStore;
    /// Drops the store and opens it again from the same storage.
    fn reopen(&mut self);
}

pub struct BTreeHarness {
    memory: VectorMemory,
    store: BTreeStore<VectorMemory>,
}

impl BTreeHarness {
    pub fn new() -> Self {
        let memory = VectorMemory::default();
        let store = BTreeStore::open(memory.clone()).unwrap();
        Self { memory, store }
    }
}

impl Harness for BTreeHarness {
    fn name(&self) -> String {
        "btree".into()
    }
    fn store(&mut self) -> &mut dyn UserStore {
        &mut self.store
    }
    fn reopen(&mut self) {
        self.store = BTreeStore::open(self.memory.clone()).unwrap();
    }
}

/// SQLite on a database file in a temporary directory.
pub struct SqliteFileHarness {
    directory: TempDir,
    config: SqliteConfig,
    store: Option<SqliteStore>,
}

impl SqliteFileHarness {
    pub fn new(journal_mode: JournalMode) -> Self {
        let directory = tempfile::tempdir().expect("temporary directory");
        let config = SqliteConfig::with_journal_mode(journal_mode);
        let store = SqliteStore::open(directory.path().join("users.db"), config.clone())
            .expect("open sqlite file store");
        Self {
            directory,
            config,
            store: Some(store),
        }
    }
}

impl Harness for SqliteFileHarness {
    fn name(&self) -> String {
        format!("sqlite file {:?}", self.config.journal_mode)
    }
    fn store(&mut self) -> &mut dyn UserStore {
        self.store.as_mut().expect("store is open")
    }
    fn reopen(&mut self) {
        if let Some(store) = self.store.take() {
            store.close().expect("close");
        }
        let path = self.directory.path().join("users.db");
        self.store = Some(SqliteStore::open(path, self.config.clone()).expect("reopen"));
    }
}

/// SQLite in memory: reopening is not possible, so `reopen` keeps the store.
pub struct SqliteMemoryHarness {
    journal_mode: JournalMode,
    store: SqliteStore,
}

impl SqliteMemoryHarness {
    pub fn new(journal_mode: JournalMode) -> Self {
        let store = SqliteStore::open_in_memory(SqliteConfig::with_journal_mode(journal_mode))
            .expect("open in-memory store");
        Self {
            journal_mode,
            store,
        }
    }
}

impl Harness for SqliteMemoryHarness {
    fn name(&self) -> String {
        format!("sqlite in-memory {:?}", self.journal_mode)
    }
    fn store(&mut self) -> &mut dyn UserStore {
        &mut self.store
    }
    fn reopen(&mut self) {}
}

/// SQLite through the stable-memory VFS, on a `VectorMemory`.
pub struct StableSqliteHarness {
    memory: VectorMemory,
    config: SqliteConfig,
    store: Option<StableSqliteStore>,
}

impl StableSqliteHarness {
    pub fn new(journal_mode: JournalMode) -> Self {
        let memory = VectorMemory::default();
        let config = StableSqliteStore::config_with_journal_mode(journal_mode);
        let store =
            StableSqliteStore::open(&Self::file_name(&config), memory.clone(), config.clone())
                .expect("open stable sqlite store");
        Self {
            memory,
            config,
            store: Some(store),
        }
    }
}

impl StableSqliteHarness {
    /// One file name per configuration, so that the harnesses of one thread coexist.
    fn file_name(config: &SqliteConfig) -> String {
        format!("users-{:?}.db", config.journal_mode)
    }
}

impl Harness for StableSqliteHarness {
    fn name(&self) -> String {
        format!("stable sqlite {:?}", self.config.journal_mode)
    }
    fn store(&mut self) -> &mut dyn UserStore {
        self.store.as_mut().expect("store is open")
    }
    fn reopen(&mut self) {
        if let Some(store) = self.store.take() {
            store.close().expect("close");
        }
        let name = Self::file_name(&self.config);
        let store = StableSqliteStore::open(&name, self.memory.clone(), self.config.clone())
            .expect("reopen");
        self.store = Some(store);
    }
}

/// The page tree on a `VectorMemory`. Every other reopen skips the close, as an upgrade
/// that skipped `pre_upgrade` would, so the open counts the rows itself; every third opens it
/// as the edge component does ([`PerRequestPageTree`]), which must read what the heap-held
/// index wrote and the other way round.
pub struct PageTreeHarness {
    memory: VectorMemory,
    store: Option<PageTreeOpened>,
    reopens: u32,
}

/// The page tree, opened one way or the other.
enum PageTreeOpened {
    Held(PageTreeStore<VectorMemory>),
    PerRequest(PerRequestPageTree<VectorMemory>),
}

impl PageTreeHarness {
    pub fn new() -> Self {
        let memory = VectorMemory::default();
        let store = PageTreeStore::open(memory.clone()).expect("open the page tree");
        Self {
            memory,
            store: Some(PageTreeOpened::Held(store)),
            reopens: 0,
        }
    }
}

impl Harness for PageTreeHarness {
    fn name(&self) -> String {
        "page tree".into()
    }
    fn store(&mut self) -> &mut dyn UserStore {
        match self.store.as_mut().expect("store is open") {
            PageTreeOpened::Held(store) => store,
            PageTreeOpened::PerRequest(store) => store,
        }
    }
    fn reopen(&mut self) {
        if let Some(store) = self.store.take() {
            if self.reopens.is_multiple_of(2) {
                match store {
                    PageTreeOpened::Held(store) => store.close().expect("close"),
                    PageTreeOpened::PerRequest(store) => store.close().expect("close"),
                }
            }
        }
        self.reopens += 1;
        let memory = self.memory.clone();
        self.store = Some(if self.reopens % 3 == 1 {
            PageTreeOpened::PerRequest(
                PerRequestPageTree::open_per_request(memory).expect("reopen per request"),
            )
        } else {
            PageTreeOpened::Held(PageTreeStore::open(memory).expect("reopen"))
        });
    }
}

/// One harness of every engine configuration the library supports natively.
pub fn all_harnesses() -> Vec<Box<dyn Harness>> {
    let mut harnesses: Vec<Box<dyn Harness>> = vec![
        Box::new(BTreeHarness::new()),
        Box::new(PageTreeHarness::new()),
        Box::new(SqliteMemoryHarness::new(JournalMode::Memory)),
        Box::new(SqliteMemoryHarness::new(JournalMode::Off)),
        Box::new(StableSqliteHarness::new(JournalMode::Memory)),
        Box::new(StableSqliteHarness::new(JournalMode::Off)),
    ];
    for journal_mode in JournalMode::ALL {
        harnesses.push(Box::new(SqliteFileHarness::new(journal_mode)));
    }
    harnesses
}
