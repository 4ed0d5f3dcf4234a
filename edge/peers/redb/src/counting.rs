//! [`CountingBackend`]: redb's file backend, counting what it reads, writes and syncs.

use redb::{BackendError, StorageBackend};
use std::io::Error as BackendIoError;
use std::ops::Bound;
use std::sync::Arc;
use userstore_peer_common::IoCounters;

/// A [`StorageBackend`] that counts the syncs and the bytes read and written of `inner` (redb's
/// `FileBackend` on the data file), every other call passed through as is (locks included).
#[derive(Debug)]
pub struct CountingBackend<B> {
    inner: B,
    counters: Arc<IoCounters>,
}

impl<B> CountingBackend<B> {
    /// `inner`, counted in `counters`.
    pub fn new(inner: B, counters: Arc<IoCounters>) -> Self {
        Self { inner, counters }
    }
}

impl<B: StorageBackend> StorageBackend for CountingBackend<B> {
    fn len(&self) -> Result<u64, BackendIoError> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BackendIoError> {
        self.counters.read(out.len() as u64);
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), BackendIoError> {
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), BackendIoError> {
        self.counters.sync();
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), BackendIoError> {
        self.counters.write(data.len() as u64);
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), BackendIoError> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}
