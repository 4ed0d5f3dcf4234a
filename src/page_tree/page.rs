//! One 64 KiB page of the engine's memory, read and written in small pieces.
//!
//! Every read and write goes straight to stable memory: a read costs 20 instructions plus one
//! per byte (docs/metering.md §5), and the page's first access and first write in a message
//! cost 80,000 each under the IC's current meter (§6), however few bytes are moved. So the
//! engine reads the few bytes it needs (a leaf's header, the slots a search probes, one
//! record) rather than the page, and never copies a page into the heap on the common path.

use ic_stable_structures::Memory;

/// Bytes of a page: one Wasm page, the unit the IC charges (docs/metering.md §6).
pub const PAGE_BYTES: usize = 64 * 1024;

/// A page number in the engine's memory.
pub type PageNo = u32;

/// The byte offset of `offset` in page `page`.
fn address(page: PageNo, offset: usize) -> u64 {
    u64::from(page) * PAGE_BYTES as u64 + offset as u64
}

/// Reads `dst.len()` bytes at `offset` of `page`.
pub fn read(memory: &impl Memory, page: PageNo, offset: usize, dst: &mut [u8]) {
    memory.read(address(page, offset), dst);
}

/// Writes `src` at `offset` of `page`.
pub fn write(memory: &impl Memory, page: PageNo, offset: usize, src: &[u8]) {
    memory.write(address(page, offset), src);
}

/// The little-endian `u16` at `offset` of `page`.
pub fn read_u16(memory: &impl Memory, page: PageNo, offset: usize) -> u16 {
    let mut bytes = [0; 2];
    read(memory, page, offset, &mut bytes);
    u16::from_le_bytes(bytes)
}

/// The little-endian `u32` at `offset` of `page`.
pub fn read_u32(memory: &impl Memory, page: PageNo, offset: usize) -> u32 {
    let mut bytes = [0; 4];
    read(memory, page, offset, &mut bytes);
    u32::from_le_bytes(bytes)
}

/// The little-endian `u64` at `offset` of `page`.
pub fn read_u64(memory: &impl Memory, page: PageNo, offset: usize) -> u64 {
    let mut bytes = [0; 8];
    read(memory, page, offset, &mut bytes);
    u64::from_le_bytes(bytes)
}

/// Writes `value` little-endian at `offset` of `page`.
pub fn write_u16(memory: &impl Memory, page: PageNo, offset: usize, value: u16) {
    write(memory, page, offset, &value.to_le_bytes());
}

/// Writes `value` little-endian at `offset` of `page`.
pub fn write_u32(memory: &impl Memory, page: PageNo, offset: usize, value: u32) {
    write(memory, page, offset, &value.to_le_bytes());
}

/// Writes `value` little-endian at `offset` of `page`.
pub fn write_u64(memory: &impl Memory, page: PageNo, offset: usize, value: u64) {
    write(memory, page, offset, &value.to_le_bytes());
}
