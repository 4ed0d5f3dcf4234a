//! What a peer store read, wrote and synced since it was opened: the load-independent figures
//! the edge benchmark compares the peers with userstore's engines on (`x-userstore-syncs`,
//! `x-userstore-bytes-read`, `x-userstore-bytes-written`; the edge host opens a store per
//! request, so "since the open" is "in this request").

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a store's file operations since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Syncs of a file (`fsync`/`fdatasync`, WASI's `sync-data`); a directory's sync, which
    /// SQLite makes inside its VFS after creating a journal, is not seen.
    pub syncs: u64,
    /// Bytes read from the store's files.
    pub bytes_read: u64,
    /// Bytes written to the store's files.
    pub bytes_written: u64,
}

impl IoCounts {
    /// The operations from `earlier` to `self` (both snapshots of one store).
    pub fn since(self, earlier: IoCounts) -> IoCounts {
        IoCounts {
            syncs: self.syncs - earlier.syncs,
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
        }
    }
}

#[cfg(feature = "edge")]
impl From<IoCounts> for userstore::edge::session::Io {
    fn from(counts: IoCounts) -> Self {
        Self {
            syncs: counts.syncs,
            bytes_read: counts.bytes_read,
            bytes_written: counts.bytes_written,
        }
    }
}

/// The counters a store's file layer adds to, shared with the store (atomics: redb's backend
/// must be `Send + Sync`).
#[derive(Debug, Default)]
pub struct IoCounters {
    syncs: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

impl IoCounters {
    /// Counts a sync.
    pub fn sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a read of `bytes`.
    pub fn read(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a write of `bytes`.
    pub fn write(&self, bytes: u64) {
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> IoCounts {
        IoCounts {
            syncs: self.syncs.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_subtract() {
        let counters = IoCounters::default();
        counters.read(10);
        let before = counters.snapshot();
        counters.sync();
        counters.write(4096);
        counters.read(5);
        let delta = counters.snapshot().since(before);
        assert_eq!(
            delta,
            IoCounts {
                syncs: 1,
                bytes_read: 5,
                bytes_written: 4096
            }
        );
    }
}
