//! [`StableSqliteStore`]: the user table in SQLite whose pages live straight in an
//! ic-stable-structures `Memory` (in a canister, a virtual memory of its memory manager),
//! through a VFS of this crate ([`vfs`]) with no file system in between.
//!
//! The SQL and the table are shared with [`crate::SqliteStore`]
//! ([`crate::sqlite_shared::SqlTable`]); what differs is the storage:
//! - the database file is a [`memory_file::MemoryFile`]: page n of the database at a fixed
//!   offset of the Memory, behind a 4 KiB header that also keeps the row count;
//! - the rollback journal is SQLite's in-heap one (`journal_mode=MEMORY`) or none
//!   (`journal_mode=OFF`, where the store undoes a failed batch itself); every other
//!   journal mode is refused with [`crate::StoreError::InvalidConfig`];
//! - with `cache_spill=OFF` SQLite writes pages to the Memory only at `COMMIT`, and only
//!   the pages the transaction changed;
//! - SQLite's page cache is this engine's own ([`crate::sqlite_shared::page_cache`]):
//!   page-aligned buffers and no LRU list, so that a message dirties only the heap pages it
//!   changes.
//!
//! # Why an in-heap journal is as safe here as PERSIST
//! A journal on disk exists to undo a transaction that a crash interrupted half-written.
//! On the IC that cannot happen: every message is atomic, and a trap discards all of the
//! message's heap and stable-memory writes. A transaction begins and commits inside one
//! message (a store call never awaits), and every storage failure inside an update traps:
//! the canister's service layer traps on [`crate::StoreError::Storage`] and a failed
//! stable-memory write or grow traps by itself. So a commit is either all in stable memory
//! with the message, or none of it is; the only rollback left is a `ROLLBACK` inside the
//! message (a batch that meets a duplicate id), which SQLite's in-heap journal serves.
//!
//! Natively (tests, over `VectorMemory`) there is no message to discard a half-done
//! commit; the store is correct there for everything except a process crash in the middle
//! of a commit, which the tests do not simulate.

mod engine;
pub mod memory_file;
mod store;
pub mod vfs;

pub use store::StableSqliteStore;
