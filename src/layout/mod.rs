//! Where everything lives in a store canister's stable memory, and which engine wrote it.
//!
//! Every canister of this project splits stable memory with one ic-stable-structures
//! `MemoryManager` at page 0. Its virtual memory [`SETTINGS_MEMORY_ID`] keeps the canister's
//! settings ([`crate::settings`]), which record the engine. This module decides where each
//! engine keeps its data ([`open_engine`]) and hands it that memory
//! ([`EngineStorage`]); an engine knows nothing of the layout.
//!
//! The memory ids are part of the persistent format: changing one loses data on upgrade.
//! The three engines released before the engine was recorded keep their data where they
//! always had it ([`placement`]); every engine added since keeps it in the region past the
//! manager's first bucket, or in [`ENGINE_DATA_MEMORY_ID`] if it needs a file system beside
//! it. What this module relies on of ic-stable-structures' private formats is in
//! [`formats`].
//!
//! The canisters reach their memories through [`canister_memory`] and
//! [`with_memory_manager`], which share one manager per canister (natively, over a
//! `VectorMemory`, per thread).

pub mod formats;

use crate::engine::{EngineMemory, EngineStorage, FileSystemMemories, MemoryAccess, StorageEngine};
use crate::error::StoreError;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, Memory, RestrictedMemory};

const SETTINGS: u8 = 0;
const BTREE_USERS: u8 = 1;
const SQLITE_DATABASE: u8 = 2;
const ENGINE_DATA: u8 = 3;
const STABLE_SQLITE_DATABASE: u8 = 7;

/// The canister's persisted settings (writers, engine, configuration, budget).
pub const SETTINGS_MEMORY_ID: MemoryId = MemoryId::new(SETTINGS);

/// The B-tree engine's map in canisters first installed before it had a region of its own.
pub const BTREE_USERS_MEMORY_ID: MemoryId = MemoryId::new(BTREE_USERS);

/// The WASI SQLite engine's database file, mounted by ic-wasi-polyfill as one virtual
/// memory.
pub const SQLITE_DATABASE_MEMORY_ID: MemoryId = MemoryId::new(SQLITE_DATABASE);

/// The data of an engine added after the engine was recorded that cannot have the region
/// (it needs a file system or a memory manager of its own beside it).
pub const ENGINE_DATA_MEMORY_ID: MemoryId = MemoryId::new(ENGINE_DATA);

/// The stable-memory SQLite engine's database: header and pages.
pub const STABLE_SQLITE_DATABASE_MEMORY_ID: MemoryId = MemoryId::new(STABLE_SQLITE_DATABASE);

/// The file system of an engine that needs one (the WASI SQLite engine's journal, WAL and
/// temporary files): ten consecutive virtual memories, ids 10 to 19.
pub const FILE_SYSTEM_MEMORY_IDS: std::ops::Range<u8> = 10..20;

/// The first Wasm page of the region: the memory manager's header page and its first
/// bucket, which holds the settings, come before it. An engine in the region is the only
/// user of the manager besides the settings, which [`crate::settings::MAX_SETTINGS_BYTES`]
/// keeps inside that first bucket, so the manager never grows into the region.
pub const REGION_FIRST_PAGE: u64 = formats::MANAGER_HEADER_PAGES + formats::MANAGER_BUCKET_PAGES;

/// The names of the engines whose canisters were released before the engine was recorded
/// (their layouts are told apart by [`engine_of_unrecorded_layout`]).
const BTREE: &str = "StableBTreeMap";
const SQLITE: &str = "Sqlite";
const STABLE_SQLITE: &str = "StableSqlite";

/// A virtual memory of the canister's stable memory.
pub type CanisterMemory = VirtualMemory<DefaultMemoryImpl>;

/// The region: from [`REGION_FIRST_PAGE`] to the end of stable memory.
pub type RegionMemory = RestrictedMemory<DefaultMemoryImpl>;

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(stable_memory());
}

/// The canister's whole stable memory (the memory manager starts at its first page). On
/// Wasm every `DefaultMemoryImpl` is that memory.
#[cfg(target_arch = "wasm32")]
pub fn stable_memory() -> DefaultMemoryImpl {
    DefaultMemoryImpl::default()
}

/// The canister's whole stable memory (the memory manager starts at its first page).
/// Natively each `DefaultMemoryImpl` is a new `VectorMemory`, so the manager and the region
/// share this one, per thread.
#[cfg(not(target_arch = "wasm32"))]
pub fn stable_memory() -> DefaultMemoryImpl {
    thread_local! {
        static STABLE_MEMORY: DefaultMemoryImpl = DefaultMemoryImpl::default();
    }
    STABLE_MEMORY.with(Clone::clone)
}

/// The canister's virtual memory `id`.
pub fn canister_memory(id: MemoryId) -> CanisterMemory {
    with_memory_manager(|manager| manager.get(id))
}

/// Lends the canister's memory manager to `f` (for storage that needs the manager itself,
/// like ic-wasi-polyfill's file system).
pub fn with_memory_manager<R>(f: impl FnOnce(&MemoryManager<DefaultMemoryImpl>) -> R) -> R {
    MEMORY_MANAGER.with(f)
}

/// The region of stable memory past the manager's first bucket.
pub fn region_memory() -> RegionMemory {
    RestrictedMemory::new(
        stable_memory(),
        REGION_FIRST_PAGE..ic_stable_structures::MAX_PAGES,
    )
}

/// The first Wasm page past everything the memory manager has handed out; 0 when stable
/// memory is empty, `None` when it does not start with a manager.
pub fn manager_end_page() -> Option<u64> {
    formats::manager_end_page(&stable_memory())
}

/// Where an engine keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// In the virtual memory of the manager with this id.
    Virtual(u8),
    /// In the region, unless the virtual memory with this id already holds the data (a
    /// canister first installed before the region).
    RegionUnlessIn(u8),
}

/// Where the engine `name`, which reaches its memory as `access` says, keeps its data. Only
/// an engine handed its memory alone can have the region: one with a file system or a
/// manager of its own needs the manager to grow past its first bucket.
fn placement(name: &str, access: MemoryAccess) -> Placement {
    match (name, access) {
        (BTREE, _) => Placement::RegionUnlessIn(BTREE_USERS),
        (SQLITE, _) => Placement::Virtual(SQLITE_DATABASE),
        (STABLE_SQLITE, _) => Placement::Virtual(STABLE_SQLITE_DATABASE),
        // No virtual memory ever held a newer engine's data.
        (_, MemoryAccess::Handed) => Placement::RegionUnlessIn(ENGINE_DATA),
        (_, MemoryAccess::HandedWithFileSystem | MemoryAccess::OwnManager) => {
            Placement::Virtual(ENGINE_DATA)
        }
    }
}

/// Where the canister keeps engine `E`'s data, decided by [`place`] and not yet opened.
pub struct Placed {
    memory: EngineMemory,
    memory_id: Option<u8>,
}

/// Decides where engine `E` keeps its data, writing nothing. Refuses memory that another
/// layout owns: data outside the memory manager for an engine in a virtual memory (the
/// region of a B-tree canister, which the manager's next bucket would overwrite), or a
/// manager grown past its first bucket for an engine in the region.
pub fn place<E: StorageEngine>() -> Result<Placed, StoreError> {
    let doing = format!("opening the {} engine", E::NAME);
    let (memory, memory_id) = match placement(E::NAME, E::MEMORY_ACCESS) {
        Placement::RegionUnlessIn(id) if canister_memory(MemoryId::new(id)).size() > 0 => (
            EngineMemory::Virtual(canister_memory(MemoryId::new(id))),
            Some(id),
        ),
        Placement::RegionUnlessIn(_) => {
            if manager_end_page().is_none_or(|end| end > REGION_FIRST_PAGE) {
                return Err(StoreError::storage(
                    &doing,
                    "the memory manager holds more than the settings' bucket, over the pages \
                     of the region where this engine keeps its data",
                ));
            }
            (EngineMemory::Region(region_memory()), None)
        }
        Placement::Virtual(id) => {
            refuse_data_outside_manager(&doing)?;
            (
                EngineMemory::Virtual(canister_memory(MemoryId::new(id))),
                Some(id),
            )
        }
    };
    Ok(Placed { memory, memory_id })
}

impl Placed {
    /// Opens engine `E` here with `config`, as Wasm instance `instance`
    /// ([`EngineStorage::instance`]).
    pub fn open<E: StorageEngine>(self, config: E::Config, instance: u64) -> Result<E, StoreError> {
        with_memory_manager(|manager| {
            let file_system = (E::MEMORY_ACCESS == MemoryAccess::HandedWithFileSystem).then_some(
                FileSystemMemories {
                    manager,
                    ids: FILE_SYSTEM_MEMORY_IDS,
                },
            );
            E::open(
                EngineStorage {
                    memory: self.memory,
                    memory_id: self.memory_id,
                    file_system,
                    instance,
                },
                config,
            )
        })
    }
}

/// Opens engine `E` with `config` where [`place`] puts it.
pub fn open_engine<E: StorageEngine>(config: E::Config, instance: u64) -> Result<E, StoreError> {
    place::<E>()?.open(config, instance)
}

/// Refuses, before anything is written, to open `what` in a canister whose stable memory
/// holds pages the memory manager does not own: the region of an engine that keeps its data
/// there. The manager hands out its next bucket right where the region starts, so an engine
/// that kept its data in the manager would overwrite it.
fn refuse_data_outside_manager(what: &str) -> Result<(), StoreError> {
    let size = stable_memory().size();
    match manager_end_page() {
        Some(end) if size <= end => Ok(()),
        _ => Err(StoreError::storage(
            what,
            "stable memory holds data outside the memory manager, in the region where \
             another engine keeps its data",
        )),
    }
}

/// The version of this layout recorded in a canister's settings at install: 1, the layout
/// above with the engine recorded. Canisters installed before have no version recorded.
pub const LAYOUT_VERSION: u32 = 1;

/// Which engine wrote a canister installed before the engine was recorded, worked out from
/// the memories each of those engines uses: `Ok(None)` when none holds data,
/// [`StoreError::InvalidConfig`] when more than one does (the layout cannot say which one
/// the table is in).
pub fn engine_of_unrecorded_layout() -> Result<Option<&'static str>, StoreError> {
    let has_data = |id: MemoryId| canister_memory(id).size() > 0;
    let region = region_memory();
    let btree = has_data(BTREE_USERS_MEMORY_ID)
        || (manager_end_page() == Some(REGION_FIRST_PAGE)
            && formats::starts_with(&region, formats::BTREE_MAP_MAGIC));
    let sqlite = has_data(SQLITE_DATABASE_MEMORY_ID)
        || FILE_SYSTEM_MEMORY_IDS
            .clone()
            .any(|id| has_data(MemoryId::new(id)));
    let stable_sqlite = has_data(STABLE_SQLITE_DATABASE_MEMORY_ID);
    let found: Vec<&'static str> = [
        (btree, BTREE),
        (sqlite, SQLITE),
        (stable_sqlite, STABLE_SQLITE),
    ]
    .into_iter()
    .filter_map(|(present, name)| present.then_some(name))
    .collect();
    match found.as_slice() {
        [] => Ok(None),
        [engine] => Ok(Some(engine)),
        several => Err(StoreError::invalid_config(format!(
            "stable memory holds the data of several engines ({}) and records none: this \
             canister cannot tell which one its table is in",
            several.join(", ")
        ))),
    }
}
