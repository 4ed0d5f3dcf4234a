//! A database file kept in an ic-stable-structures [`Memory`]: its layout, its header, and
//! the byte-level reads and writes the VFS ([`super::vfs`]) forwards to it.
//!
//! # Layout of the Memory
//! ```text
//! [0, 4096)            header (this module's, not SQLite's)
//! [4096, 4096 + size)  the database file: SQLite page n (1-based) of P bytes at 4096 + (n-1)·P
//! ```
//! The header takes 4 KiB so that the file starts on a 4 KiB boundary: the IC charges each
//! 4 KiB stable-memory page a message newly dirties (docs/metering.md §6), so a 4 KiB
//! SQLite page must be exactly one such page (and a 64 KiB one exactly 16), never straddle
//! two. A canister's `VirtualMemory` keeps that alignment in physical stable memory: its
//! buckets are whole 64 KiB Wasm pages.
//!
//! Header fields, little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"USVFS\0\0\x01"` |
//! | 8 | 4 | layout version (1) |
//! | 12 | 4 | SQLite page size, as last written to page 1 (0 before the first write) |
//! | 16 | 8 | database file size in bytes |
//! | 24 | 8 | application value (the store keeps its row count here) |
//! | 32 | 8 | flags: bit 0 = the application value is set |
//! | 40 | 8 | offset of the file in the Memory (4096) |
//!
//! The rest of the 4 KiB is zero and reserved. A Memory of size 0, or whose first 48 bytes
//! are all zero, is not initialized yet: SQLite's first open with `SQLITE_OPEN_CREATE`
//! writes the header. A Memory with any other magic or version is refused.
//!
//! The Memory only grows. A truncated file keeps its old bytes past the new end, so a
//! write that starts past the end first zero-fills the hole, as a file system would.

use ic_stable_structures::Memory;
use std::cell::Cell;
use std::fmt;
use std::ptr;

/// Bytes reserved for the header at the start of the Memory; the file starts here.
pub const HEADER_SIZE: u64 = 4096;
/// Magic bytes at offset 0 of an initialized Memory.
pub const MAGIC: [u8; 8] = *b"USVFS\0\0\x01";
/// Version of the layout described in the module documentation.
pub const LAYOUT_VERSION: u32 = 1;

/// A Wasm page, the unit a `Memory` grows by.
const WASM_PAGE: u64 = 64 * 1024;
const OFF_VERSION: usize = 8;
const OFF_PAGE_SIZE: usize = 12;
const OFF_FILE_SIZE: usize = 16;
const OFF_APP_VALUE: usize = 24;
const OFF_FLAGS: usize = 32;
const OFF_DATA_OFFSET: usize = 40;
const HEADER_FIELDS_LEN: usize = 48;
const FLAG_APP_VALUE_SET: u64 = 1;

/// Why a Memory cannot serve as a database file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryFileError {
    /// The Memory holds something else (another magic), or a layout version this code does
    /// not know, or a header that contradicts the Memory's size.
    NotADatabaseMemory,
    /// The header was never written (SQLite never opened the file with CREATE).
    NotInitialized,
}

impl fmt::Display for MemoryFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotADatabaseMemory => {
                write!(
                    f,
                    "the stable memory does not hold a userstore SQLite database"
                )
            }
            Self::NotInitialized => write!(f, "the database's stable memory has no header yet"),
        }
    }
}

impl std::error::Error for MemoryFileError {}

/// Write counters of a file since it was registered: what a test needs to check that a
/// commit writes only the pages it changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// `xWrite` calls (database pages written).
    pub page_writes: u64,
    /// Bytes those calls wrote.
    pub page_bytes: u64,
    /// Writes of header fields (file size, page size, application value).
    pub header_writes: u64,
}

/// What a [`MemoryFile::read`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Every byte asked for was in the file.
    Complete,
    /// The file ended first; the rest of the buffer was zero-filled.
    Short,
    /// The range lies outside the Memory (the header's file size is corrupted); nothing
    /// was read.
    OutOfRange,
}

/// A database file in a `Memory`, with the header fields kept in the heap.
pub struct MemoryFile {
    memory: Box<dyn Memory>,
    /// The Memory's size in bytes as last seen (only this file grows it).
    capacity: Cell<u64>,
    initialized: Cell<bool>,
    file_size: Cell<u64>,
    page_size: Cell<u32>,
    app_value: Cell<Option<u64>>,
    stats: Cell<WriteStats>,
}

impl MemoryFile {
    /// Reads `memory`'s header, writing nothing.
    pub fn load(memory: Box<dyn Memory>) -> Result<Self, MemoryFileError> {
        let capacity = memory.size().saturating_mul(WASM_PAGE);
        let file = Self {
            memory,
            capacity: Cell::new(capacity),
            initialized: Cell::new(false),
            file_size: Cell::new(0),
            page_size: Cell::new(0),
            app_value: Cell::new(None),
            stats: Cell::new(WriteStats::default()),
        };
        if capacity < HEADER_SIZE {
            return Ok(file);
        }
        let mut fields = [0u8; HEADER_FIELDS_LEN];
        file.memory.read(0, &mut fields);
        if fields.iter().all(|&byte| byte == 0) {
            return Ok(file);
        }
        let file_size = le_u64(&fields, OFF_FILE_SIZE);
        let valid = fields[0..8] == MAGIC
            && le_u32(&fields, OFF_VERSION) == LAYOUT_VERSION
            && le_u64(&fields, OFF_DATA_OFFSET) == HEADER_SIZE
            && file_size <= capacity - HEADER_SIZE;
        if !valid {
            return Err(MemoryFileError::NotADatabaseMemory);
        }
        file.initialized.set(true);
        file.file_size.set(file_size);
        file.page_size.set(le_u32(&fields, OFF_PAGE_SIZE));
        if le_u64(&fields, OFF_FLAGS) & FLAG_APP_VALUE_SET != 0 {
            file.app_value.set(Some(le_u64(&fields, OFF_APP_VALUE)));
        }
        Ok(file)
    }

    /// Whether the header has been written.
    pub fn is_initialized(&self) -> bool {
        self.initialized.get()
    }

    /// Writes a fresh header (an empty file). False if the Memory cannot grow.
    pub fn initialize(&self) -> bool {
        if !self.ensure_capacity(HEADER_SIZE) {
            return false;
        }
        let mut fields = [0u8; HEADER_FIELDS_LEN];
        fields[0..8].copy_from_slice(&MAGIC);
        fields[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        fields[OFF_DATA_OFFSET..OFF_DATA_OFFSET + 8].copy_from_slice(&HEADER_SIZE.to_le_bytes());
        self.write_header(0, &fields);
        self.initialized.set(true);
        self.file_size.set(0);
        self.page_size.set(0);
        self.app_value.set(None);
        true
    }

    /// The database file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size.get()
    }

    /// The SQLite page size recorded from page 1 (0 before the first write).
    pub fn page_size(&self) -> u32 {
        self.page_size.get()
    }

    /// The Memory's size in bytes: header, file and the unused tail of the last Wasm page.
    pub fn memory_bytes(&self) -> u64 {
        self.capacity.get()
    }

    /// The header's application value, if it was ever set.
    pub fn app_value(&self) -> Option<u64> {
        self.app_value.get()
    }

    /// Sets the application value: one 16-byte header write (value and flag), none if it
    /// is unchanged.
    pub fn set_app_value(&self, value: u64) -> Result<(), MemoryFileError> {
        if !self.initialized.get() {
            return Err(MemoryFileError::NotInitialized);
        }
        if self.app_value.get() == Some(value) {
            return Ok(());
        }
        let mut bytes = [0u8; 16];
        bytes[0..8].copy_from_slice(&value.to_le_bytes());
        bytes[8..16].copy_from_slice(&FLAG_APP_VALUE_SET.to_le_bytes());
        self.write_header(OFF_APP_VALUE as u64, &bytes);
        self.app_value.set(Some(value));
        Ok(())
    }

    /// Write counters since the file was loaded.
    pub fn stats(&self) -> WriteStats {
        self.stats.get()
    }

    fn count(&self, record: impl FnOnce(&mut WriteStats)) {
        let mut stats = self.stats.get();
        record(&mut stats);
        self.stats.set(stats);
    }

    /// Makes the Memory at least `end` bytes long. False if it cannot grow.
    pub fn ensure_capacity(&self, end: u64) -> bool {
        let capacity = self.capacity.get();
        if end <= capacity {
            return true;
        }
        let pages = (end - capacity).div_ceil(WASM_PAGE);
        let previous = self.memory.grow(pages);
        let Ok(previous) = u64::try_from(previous) else {
            return false;
        };
        self.capacity
            .set(previous.saturating_add(pages).saturating_mul(WASM_PAGE));
        true
    }

    fn write_header(&self, offset: u64, bytes: &[u8]) {
        self.count(|stats| stats.header_writes += 1);
        self.memory.write(offset, bytes);
    }

    fn set_file_size(&self, size: u64) {
        if size != self.file_size.get() {
            self.file_size.set(size);
            self.write_header(OFF_FILE_SIZE as u64, &size.to_le_bytes());
        }
    }

    /// Writes zeros over `[from, to)` of the file (a range inside the capacity).
    fn zero_fill(&self, from: u64, to: u64) {
        const ZEROS: [u8; 4096] = [0; 4096];
        let mut at = from;
        while at < to {
            let chunk = (to - at).min(ZEROS.len() as u64);
            // chunk <= 4096, so the conversion is exact.
            self.memory
                .write(HEADER_SIZE + at, &ZEROS[..chunk as usize]);
            at += chunk;
        }
    }

    /// Reads `[offset, offset + len)` of the file into `destination`; what lies past the
    /// end of the file reads as zeros.
    ///
    /// # Safety
    /// `destination` must be valid for writes of `len` bytes and must not point into the
    /// Memory.
    pub unsafe fn read(&self, destination: *mut u8, len: usize, offset: u64) -> Read {
        let size = self.file_size.get();
        let available = if offset >= size {
            0
        } else {
            // At most `len`, so the conversion back to usize is exact.
            (size - offset).min(len as u64) as usize
        };
        if available > 0 {
            let end = HEADER_SIZE
                .checked_add(offset)
                .and_then(|start| start.checked_add(available as u64));
            if end.is_none_or(|end| end > self.capacity.get()) {
                return Read::OutOfRange;
            }
            let start = HEADER_SIZE + offset;
            // SAFETY: the caller guarantees `destination` is valid for `len >= available`
            // bytes, and `[start, end)` lies inside the Memory (checked above).
            unsafe { self.memory.read_unsafe(start, destination, available) };
        }
        if available < len {
            // SAFETY: `destination + available .. destination + len` is inside the
            // caller's buffer.
            unsafe { ptr::write_bytes(destination.add(available), 0, len - available) };
            return Read::Short;
        }
        Read::Complete
    }

    /// Writes `source` at `offset` of the file, growing the Memory and the file as needed.
    /// False if the Memory cannot grow (or the range overflows).
    pub fn write(&self, source: &[u8], offset: u64) -> bool {
        self.count(|stats| {
            stats.page_writes += 1;
            stats.page_bytes += source.len() as u64;
        });
        let Some(end) = offset.checked_add(source.len() as u64) else {
            return false;
        };
        if !end
            .checked_add(HEADER_SIZE)
            .is_some_and(|memory_end| self.ensure_capacity(memory_end))
        {
            return false;
        }
        let size = self.file_size.get();
        if offset > size {
            self.zero_fill(size, offset);
        }
        self.memory.write(HEADER_SIZE + offset, source);
        if end > size {
            self.set_file_size(end);
        }
        if offset == 0 && source.len() >= 18 {
            // SQLite's page size: 2 bytes big-endian at offset 16 of page 1; 1 means 65536.
            let raw = u32::from(u16::from_be_bytes([source[16], source[17]]));
            let page_size = if raw == 1 { 65_536 } else { raw };
            if page_size != self.page_size.get() {
                self.page_size.set(page_size);
                self.write_header(OFF_PAGE_SIZE as u64, &page_size.to_le_bytes());
            }
        }
        true
    }

    /// Sets the file's size; growing zero-fills. False if the Memory cannot grow.
    pub fn truncate(&self, size: u64) -> bool {
        let current = self.file_size.get();
        if size > current {
            if !size
                .checked_add(HEADER_SIZE)
                .is_some_and(|memory_end| self.ensure_capacity(memory_end))
            {
                return false;
            }
            self.zero_fill(current, size);
        }
        self.set_file_size(size);
        true
    }
}

fn le_u32(bytes: &[u8; HEADER_FIELDS_LEN], offset: usize) -> u32 {
    let mut field = [0u8; 4];
    field.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(field)
}

fn le_u64(bytes: &[u8; HEADER_FIELDS_LEN], offset: usize) -> u64 {
    let mut field = [0u8; 8];
    field.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn read_all(file: &MemoryFile, offset: u64, len: usize) -> (Vec<u8>, bool) {
        let mut buffer = vec![0xAA; len];
        // SAFETY: the buffer is `len` bytes and not part of the Memory.
        let read = unsafe { file.read(buffer.as_mut_ptr(), len, offset) };
        assert_ne!(read, Read::OutOfRange);
        (buffer, read == Read::Complete)
    }

    #[test]
    fn a_fresh_memory_is_not_initialized_until_created() {
        let memory = VectorMemory::default();
        let file = MemoryFile::load(Box::new(memory.clone())).unwrap();
        assert!(!file.is_initialized());
        assert!(file.initialize());
        let reloaded = MemoryFile::load(Box::new(memory)).unwrap();
        assert!(reloaded.is_initialized());
        assert_eq!(reloaded.file_size(), 0);
    }

    #[test]
    fn writes_survive_a_reload_with_size_page_size_and_app_value() {
        let memory = VectorMemory::default();
        let file = MemoryFile::load(Box::new(memory.clone())).unwrap();
        assert!(file.initialize());
        let mut page = vec![7u8; 4096];
        page[16..18].copy_from_slice(&4096u16.to_be_bytes());
        assert!(file.write(&page, 0));
        assert!(file.write(&[9u8; 100], 8192));
        file.set_app_value(42).unwrap();
        let reloaded = MemoryFile::load(Box::new(memory)).unwrap();
        assert_eq!(reloaded.file_size(), 8292);
        assert_eq!(reloaded.page_size(), 4096);
        assert_eq!(reloaded.app_value(), Some(42));
        // The hole between the two writes reads as zeros; the end is a short read.
        assert_eq!(read_all(&reloaded, 4096, 4096), (vec![0u8; 4096], true));
        let (tail, complete) = read_all(&reloaded, 8192, 200);
        assert!(!complete);
        assert_eq!(&tail[..100], &[9u8; 100]);
        assert_eq!(&tail[100..], &[0u8; 100]);
    }

    #[test]
    fn a_truncated_tail_does_not_come_back() {
        let file = MemoryFile::load(Box::new(VectorMemory::default())).unwrap();
        assert!(file.initialize());
        assert!(file.write(&[5u8; 8192], 0));
        assert!(file.truncate(4096));
        assert!(file.write(&[6u8; 10], 8192));
        assert_eq!(read_all(&file, 4096, 4096), (vec![0u8; 4096], true));
    }

    #[test]
    fn another_memory_is_refused() {
        let memory = VectorMemory::default();
        memory.grow(1);
        memory.write(0, b"not a database header");
        assert_eq!(
            MemoryFile::load(Box::new(memory)).err(),
            Some(MemoryFileError::NotADatabaseMemory)
        );
    }

    #[test]
    fn the_app_value_needs_a_header() {
        let file = MemoryFile::load(Box::new(VectorMemory::default())).unwrap();
        assert_eq!(file.set_app_value(1), Err(MemoryFileError::NotInitialized));
    }
}
