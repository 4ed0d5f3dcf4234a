//! Where everything lives in a canister's stable memory.
//!
//! Every canister of this project (and the benchmark canister) splits stable memory with one
//! ic-stable-structures `MemoryManager`; these are the virtual memory ids. They are part of
//! the persistent format: changing one loses data on upgrade. A B-tree canister installed
//! with the current layout keeps only its settings in the manager and its map in a region
//! after the manager's first bucket ([`crate::btree::BTreeCanisterStore`]); the other
//! engines refuse to open over such a region ([`refuse_data_outside_manager`]).
//!
//! The canisters reach their memories through [`canister_memory`] and
//! [`with_memory_manager`], which share one manager per canister (natively, over a
//! `VectorMemory`, per thread).

use crate::error::StoreError;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::DefaultMemoryImpl;

/// The canister's persisted settings (writers, SQLite configuration).
pub const SETTINGS_MEMORY_ID: MemoryId = MemoryId::new(0);

/// The B-tree engine's `StableBTreeMap` in canisters first installed before it had a region
/// of its own (see [`crate::btree::BTreeCanisterStore`]).
pub const BTREE_USERS_MEMORY_ID: MemoryId = MemoryId::new(1);

/// Path of the canisters' SQLite database file on the ic-wasi-polyfill file system.
pub const SQLITE_DATABASE_PATH: &str = "/userstore/users.db";

/// The SQLite database file, mounted by ic-wasi-polyfill as one virtual memory.
pub const SQLITE_DATABASE_MEMORY_ID: MemoryId = MemoryId::new(2);

/// The ic-wasi-polyfill file system (journal, WAL and temporary files), which needs ten
/// consecutive virtual memories: ids 10 to 19.
pub const SQLITE_FILE_SYSTEM_MEMORY_IDS: std::ops::Range<u8> = 10..20;

/// The stable-memory SQLite engine's database (`StableSqliteStore`): header and pages,
/// with no file system around them.
pub const STABLE_SQLITE_DATABASE_MEMORY_ID: MemoryId = MemoryId::new(7);

/// The name the stable-memory SQLite engine registers its database under with its VFS.
pub const STABLE_SQLITE_DATABASE_NAME: &str = "users.db";

/// A virtual memory of the canister's stable memory.
pub type CanisterMemory = VirtualMemory<DefaultMemoryImpl>;

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
/// Natively each `DefaultMemoryImpl` is a new `VectorMemory`, so the manager and the B-tree's
/// region ([`crate::btree::BTreeCanisterStore`]) share this one, per thread.
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

/// The first bytes of an ic-stable-structures `MemoryManager`'s header.
const MANAGER_MAGIC: &[u8; 3] = b"MGR";

/// The first Wasm page past everything the memory manager has handed out (its header page
/// and its buckets), read from the manager's header (ic-stable-structures 0.7: magic, version,
/// then the number of allocated buckets and the bucket size in pages, little-endian `u16`s);
/// 0 when stable memory is empty, `None` when it does not start with a manager.
pub fn manager_end_page() -> Option<u64> {
    use ic_stable_structures::Memory;
    let memory = stable_memory();
    if memory.size() == 0 {
        return Some(0);
    }
    let mut header = [0; 8];
    memory.read(0, &mut header);
    if &header[..3] != MANAGER_MAGIC {
        return None;
    }
    let buckets = u64::from(u16::from_le_bytes([header[4], header[5]]));
    let bucket_pages = u64::from(u16::from_le_bytes([header[6], header[7]]));
    Some(1 + buckets * bucket_pages)
}

/// Refuses, before anything is written, to open `what` in a canister whose stable memory
/// holds pages the memory manager does not own: the region of a B-tree canister
/// ([`crate::btree::BTreeCanisterStore`]). The manager hands out its next bucket right where
/// that region starts, so an engine that kept its data in the manager would overwrite the
/// map (say, a B-tree canister upgraded with a SQLite canister's Wasm).
pub fn refuse_data_outside_manager(what: &str) -> Result<(), StoreError> {
    use ic_stable_structures::Memory;
    let size = stable_memory().size();
    match manager_end_page() {
        Some(end) if size <= end => Ok(()),
        _ => Err(StoreError::storage(
            what,
            "stable memory holds data outside the memory manager, where a B-tree canister \
             keeps its map (was this canister installed with the B-tree engine?)",
        )),
    }
}
