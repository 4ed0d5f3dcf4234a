//! Where everything lives in a canister's stable memory.
//!
//! Every canister of this project (and the benchmark canister) splits stable memory with one
//! ic-stable-structures `MemoryManager`; these are the virtual memory ids. They are part of
//! the persistent format: changing one loses data on upgrade.
//!
//! The canisters reach their memories through [`canister_memory`] and
//! [`with_memory_manager`], which share one manager per canister (natively, over a
//! `VectorMemory`, per thread).

use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::DefaultMemoryImpl;

/// The canister's persisted settings (writers, SQLite configuration).
pub const SETTINGS_MEMORY_ID: MemoryId = MemoryId::new(0);

/// The B-tree engine's `StableBTreeMap` in canisters first installed before it had a region
/// of its own (see `crate::btree::BTreeMemory`).
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
