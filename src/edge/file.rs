//! The host's data file: [`FileMemory`] as the session's [`Durable`] memory.

use crate::edge::config::EdgeConfig;
use crate::edge::http::{Request, Response};
use crate::edge::session::{serve_on, Access, Durable, Io};
use crate::error::StoreError;
use crate::file_memory::FileMemory;

impl Durable for FileMemory {
    fn commit(&self) -> Result<(), StoreError> {
        FileMemory::commit(self).map(|_report| ())
    }

    fn rollback(&self) {
        FileMemory::rollback(self);
    }

    fn io(&self) -> Io {
        let io = FileMemory::io(self);
        Io {
            syncs: io.syncs,
            bytes_read: io.bytes_read,
            bytes_written: io.bytes_written,
        }
    }
}

/// Serves one request on the host's data file: a `FileMemory` with the session's checkpoint
/// gate, or opened shared for a read without the lock.
pub fn serve(config: &EdgeConfig, request: &Request) -> Response {
    serve_on(config, request, |path, access| match access {
        Access::Exclusive(gate) => {
            FileMemory::open(path).map(|memory| Some(memory.with_checkpoint_gate(gate)))
        }
        Access::Shared => FileMemory::open_shared(path),
    })
}
