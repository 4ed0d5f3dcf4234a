//! The stable-memory SQLite engine's file (`MemoryFile`, what its VFS reads and writes)
//! against a byte vector: writes, reads, truncations at any offsets, and reopening it from its
//! memory, as an upgrade does.

use crate::input::Input;
use ic_stable_structures::VectorMemory;
use userstore::stable_sqlite::memory_file::MemoryFile;

/// Offsets stay within 1 MiB, so files cross several Wasm pages without growing large.
const MAX_OFFSET: u32 = 1 << 20;

/// The target.
pub fn check(bytes: &[u8]) {
    let mut input = Input::new(bytes);
    let memory = VectorMemory::default();
    let mut file = MemoryFile::load(Box::new(memory.clone())).expect("an empty memory loads");
    assert!(file.initialize());
    let mut model: Vec<u8> = Vec::new();
    while !input.is_empty() {
        match input.byte() % 4 {
            0 => {
                let offset = input.below(MAX_OFFSET) as usize;
                let data = input.bytes(5_000);
                assert!(file.write(data, offset as u64));
                if model.len() < offset + data.len() {
                    model.resize(offset + data.len(), 0);
                }
                model[offset..offset + data.len()].copy_from_slice(data);
            }
            1 => {
                let offset = input.below(MAX_OFFSET + 10_000) as usize;
                let len = input.below(10_000) as usize;
                let mut read = vec![0xAA; len];
                // SAFETY: `read` is a buffer of `len` bytes outside the memory.
                unsafe { file.read(read.as_mut_ptr(), len, offset as u64) };
                let expected: Vec<u8> = (offset..offset + len)
                    .map(|at| model.get(at).copied().unwrap_or(0))
                    .collect();
                assert_eq!(read, expected, "read {len} bytes at {offset}");
            }
            2 => {
                let size = input.below(MAX_OFFSET) as usize;
                assert!(file.truncate(size as u64));
                model.resize(size, 0);
            }
            _ => {
                file = MemoryFile::load(Box::new(memory.clone())).expect("a file reloads");
            }
        }
        assert_eq!(file.file_size(), model.len() as u64, "the file's size");
    }
}
