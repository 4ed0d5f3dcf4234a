//! The data file's header: its first 64 KiB page records that the file is userstore edge
//! data, its format version and the engine that owns it, so a host configured with another
//! engine refuses the file instead of reading one engine's pages as another's.
//!
//! Layout (little-endian): 8 bytes of magic `USEREDGE`, a `u32` format version, a `u8`
//! length and the engine's name (`StorageEngine::NAME`). The engine's own pages start at
//! page 1 ([`engine_memory`]).

use crate::error::StoreError;
use ic_stable_structures::{Memory, RestrictedMemory, MAX_PAGES};

/// The magic bytes at offset 0.
pub const MAGIC: [u8; 8] = *b"USEREDGE";

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Pages the header takes; the engine's memory starts after them.
pub const HEADER_PAGES: u64 = 1;

/// Bytes read of the header: magic, version, length, and a name of up to 255 bytes.
const HEADER_BYTES: usize = 8 + 4 + 1 + 255;

/// Checks that `memory` holds data of `engine`, or records `engine` in empty memory.
/// Memory that holds another engine's data, another format or something else is refused
/// with [`StoreError::InvalidConfig`], and nothing is written.
pub fn check_or_record<M: Memory>(memory: &M, engine: &str) -> Result<(), StoreError> {
    if memory.size() == 0 {
        return record(memory, engine);
    }
    let mut bytes = [0u8; HEADER_BYTES];
    memory.read(0, &mut bytes);
    if bytes.iter().all(|byte| *byte == 0) {
        return record(memory, engine);
    }
    if bytes[..8] != MAGIC {
        return Err(StoreError::invalid_config(
            "the data file holds something else than userstore edge data",
        ));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != FORMAT_VERSION {
        return Err(StoreError::invalid_config(format!(
            "the data file has format version {version}; this host reads version {FORMAT_VERSION}"
        )));
    }
    let length = usize::from(bytes[12]);
    let recorded = String::from_utf8_lossy(&bytes[13..13 + length]);
    if recorded != engine {
        return Err(StoreError::invalid_config(format!(
            "the data file was written by the {recorded} engine; this host runs the {engine} \
             engine (set USERSTORE_ENGINE to match the data, or use another data file)"
        )));
    }
    Ok(())
}

/// Writes the header of `engine` into `memory`, growing it to the header's page if empty.
fn record<M: Memory>(memory: &M, engine: &str) -> Result<(), StoreError> {
    let name = engine.as_bytes();
    let length = u8::try_from(name.len())
        .map_err(|_| StoreError::invalid_config("an engine name longer than 255 bytes"))?;
    if memory.size() < HEADER_PAGES && memory.grow(HEADER_PAGES - memory.size()) < 0 {
        return Err(StoreError::storage(
            "recording the engine",
            "the data file cannot grow",
        ));
    }
    let mut bytes = Vec::with_capacity(13 + name.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.push(length);
    bytes.extend_from_slice(name);
    memory.write(0, &bytes);
    Ok(())
}

/// The engine's memory: every page of `memory` after the header.
pub fn engine_memory<M: Memory>(memory: M) -> RestrictedMemory<M> {
    RestrictedMemory::new(memory, HEADER_PAGES..MAX_PAGES)
}
