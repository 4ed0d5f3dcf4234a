//! [`SqliteConfig`]: the typed SQLite settings a canister is installed with.

use crate::error::StoreError;
use candid::CandidType;
use serde::{Deserialize, Serialize};

/// SQLite's `journal_mode`: how a transaction keeps what it needs to roll back.
///
/// On the IC every message is already atomic (a trap discards all of its changes), so the
/// journal serves transactions that roll back inside a message (a batch that hits a
/// duplicate id) rather than crash safety. `Off` has no rollback at all; the store then
/// undoes a failed batch itself.
#[derive(CandidType, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JournalMode {
    /// A rollback journal file, deleted after each transaction.
    Delete,
    /// A rollback journal file, truncated to zero after each transaction.
    Truncate,
    /// A rollback journal file whose header is zeroed after each transaction.
    Persist,
    /// The rollback journal is kept in heap memory.
    Memory,
    /// A write-ahead log. Needs `locking_mode = Exclusive` where the storage has no shared
    /// memory (as inside a canister); refused at configuration time where it does not work.
    Wal,
    /// No journal: transactions cannot be rolled back by SQLite.
    Off,
}

impl JournalMode {
    /// Every journal mode, in the order of the documentation.
    pub const ALL: [JournalMode; 6] = [
        Self::Delete,
        Self::Truncate,
        Self::Persist,
        Self::Memory,
        Self::Wal,
        Self::Off,
    ];

    /// The value SQLite's `PRAGMA journal_mode` takes and reports (lower case).
    pub fn as_sql(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Truncate => "truncate",
            Self::Persist => "persist",
            Self::Memory => "memory",
            Self::Wal => "wal",
            Self::Off => "off",
        }
    }
}

/// SQLite's `synchronous`: how hard it flushes to storage. Stable memory writes are
/// immediately durable once the message commits, so `Off` loses nothing on the IC.
#[derive(CandidType, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Synchronous {
    /// No syncs.
    Off,
    /// Syncs at the critical moments.
    Normal,
    /// Syncs after every write of the journal.
    Full,
    /// `Full` plus a sync of the directory after a journal is unlinked.
    Extra,
}

impl Synchronous {
    /// The number SQLite's `PRAGMA synchronous` takes and reports.
    pub fn as_sql(self) -> i64 {
        match self {
            Self::Off => 0,
            Self::Normal => 1,
            Self::Full => 2,
            Self::Extra => 3,
        }
    }
}

/// SQLite's `locking_mode`.
#[derive(CandidType, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockingMode {
    /// Locks are taken and released around each transaction.
    Normal,
    /// The connection keeps its locks: fewer file-system calls, and WAL without shared memory.
    Exclusive,
}

impl LockingMode {
    /// The value SQLite's `PRAGMA locking_mode` takes and reports (lower case).
    pub fn as_sql(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Exclusive => "exclusive",
        }
    }
}

/// The SQLite settings a store opens with. Chosen at install (the canister's init argument),
/// reported by the `config` query; `temp_store` is always `MEMORY` (temporary files on the
/// canister's file system would cost stable-memory writes for nothing).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SqliteConfig {
    /// `PRAGMA journal_mode`.
    pub journal_mode: JournalMode,
    /// `PRAGMA synchronous`.
    pub synchronous: Synchronous,
    /// `PRAGMA page_size` in bytes: a power of two from 512 to 65,536. Fixed when the
    /// database is created; a different value for an existing database is refused.
    pub page_size: u32,
    /// `PRAGMA cache_size` in pages: the page cache each connection keeps on the heap.
    pub cache_size_pages: u32,
    /// `PRAGMA locking_mode`.
    pub locking_mode: LockingMode,
}

impl Default for SqliteConfig {
    /// An in-memory journal (transactions still roll back, no journal writes to stable
    /// memory), no syncs, 4 KiB pages (the size of an IC dirty-page unit, docs/metering.md
    /// §6), an 8,192-page (32 MiB) cache, and exclusive locking.
    fn default() -> Self {
        Self {
            journal_mode: JournalMode::Memory,
            synchronous: Synchronous::Off,
            page_size: 4096,
            cache_size_pages: 8192,
            locking_mode: LockingMode::Exclusive,
        }
    }
}

/// Most bytes of heap the page cache may be configured to hold: half of the 4 GiB a wasm32
/// canister's heap can have (docs/metering.md §7).
pub const MAX_CACHE_BYTES: u64 = 2 << 30;

impl SqliteConfig {
    /// The default configuration with another journal mode.
    pub fn with_journal_mode(journal_mode: JournalMode) -> Self {
        Self {
            journal_mode,
            ..Self::default()
        }
    }

    /// Checks the values SQLite would otherwise silently ignore or clamp.
    pub fn validate(&self) -> Result<(), StoreError> {
        if !(512..=65_536).contains(&self.page_size) || !self.page_size.is_power_of_two() {
            return Err(StoreError::invalid_config(format!(
                "page_size must be a power of two from 512 to 65536, not {}",
                self.page_size
            )));
        }
        if self.cache_size_pages == 0 {
            return Err(StoreError::invalid_config(
                "cache_size_pages must be at least 1",
            ));
        }
        let cache_bytes = u64::from(self.cache_size_pages) * u64::from(self.page_size);
        if cache_bytes > MAX_CACHE_BYTES {
            return Err(StoreError::invalid_config(format!(
                "cache_size_pages {} of {} bytes is {cache_bytes} bytes of heap, more than the \
                 {MAX_CACHE_BYTES} a cache may take: a canister's heap is 4 GiB \
                 (docs/metering.md §7) and the rest of the store needs room too",
                self.cache_size_pages, self.page_size
            )));
        }
        if self.journal_mode == JournalMode::Wal && self.locking_mode != LockingMode::Exclusive {
            return Err(StoreError::invalid_config(
                "journal_mode Wal needs locking_mode Exclusive: the storage has no shared memory for the WAL index",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(SqliteConfig::default().validate(), Ok(()));
    }

    #[test]
    fn bad_page_sizes_are_refused() {
        for page_size in [0, 256, 1000, 131_072] {
            let config = SqliteConfig {
                page_size,
                ..SqliteConfig::default()
            };
            assert!(
                matches!(config.validate(), Err(StoreError::InvalidConfig { .. })),
                "{page_size}"
            );
        }
    }

    #[test]
    fn caches_larger_than_half_the_heap_are_refused() {
        let largest = SqliteConfig {
            cache_size_pages: (MAX_CACHE_BYTES / 4096) as u32,
            ..SqliteConfig::default()
        };
        assert_eq!(largest.validate(), Ok(()));
        for cache_size_pages in [largest.cache_size_pages + 1, u32::MAX] {
            let config = SqliteConfig {
                cache_size_pages,
                ..SqliteConfig::default()
            };
            assert!(
                matches!(config.validate(), Err(StoreError::InvalidConfig { .. })),
                "{cache_size_pages}"
            );
        }
    }

    #[test]
    fn wal_needs_exclusive_locking() {
        let config = SqliteConfig {
            journal_mode: JournalMode::Wal,
            locking_mode: LockingMode::Normal,
            ..SqliteConfig::default()
        };
        assert!(config.validate().is_err());
    }
}
