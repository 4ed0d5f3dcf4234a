//! Where everything lives in stable memory.
//!
//! Every canister of this project (and the benchmark canister) splits stable memory with one
//! ic-stable-structures `MemoryManager`; these are the virtual memory ids. They are part of
//! the persistent format: changing one loses data on upgrade.

use ic_stable_structures::memory_manager::MemoryId;

/// The canister's persisted settings (writers, SQLite configuration).
pub const SETTINGS_MEMORY_ID: MemoryId = MemoryId::new(0);

/// The B-tree engine's `StableBTreeMap`.
pub const BTREE_USERS_MEMORY_ID: MemoryId = MemoryId::new(1);

/// Path of the canisters' SQLite database file on the ic-wasi-polyfill file system.
pub const SQLITE_DATABASE_PATH: &str = "/userstore/users.db";

/// The SQLite database file, mounted by ic-wasi-polyfill as one virtual memory.
pub const SQLITE_DATABASE_MEMORY_ID: MemoryId = MemoryId::new(2);

/// The ic-wasi-polyfill file system (journal, WAL and temporary files), which needs ten
/// consecutive virtual memories: ids 10 to 19.
pub const SQLITE_FILE_SYSTEM_MEMORY_IDS: std::ops::Range<u8> = 10..20;
