//! An index page of the page tree (a "group"), and the entries the index stores: what
//! [`super::index`] searches and [`super::meta`] lists in the header.
//!
//! ```text
//! 0        kind 3
//! 2..4     entries in the page (u16)
//! 16..     entries, 12 bytes each (lowest key of the leaf: u64, its page: u32); 5,460 a page
//! ```

use super::page::{self, PageNo, PAGE_BYTES};
use crate::error::StoreError;
use ic_stable_structures::Memory;

/// The kind byte of an index page.
const KIND_GROUP: u8 = 3;

/// Offset of a group's entry count.
const GROUP_COUNT: usize = 2;

/// Offset of a group's first entry.
const GROUP_ENTRIES: usize = 16;

/// Bytes of one entry, in a group or the upper level.
pub const ENTRY_BYTES: usize = 12;

/// Entries of one group (index page).
pub const ENTRIES_PER_GROUP: usize = (PAGE_BYTES - GROUP_ENTRIES) / ENTRY_BYTES;

/// Entries the heap holds: the leaves of a small table (in a canister, `index`'s "Where the
/// small case is held"), or the groups of a large one; and as many as the header's page lists
/// (meta.rs). 5,107 (59.9 KiB): as many as leave the page tree canister's whole state (these
/// entries, the store and the rest, 144 bytes on wasm32) in the 60 KiB above its stack, in the
/// stack's own 64 KiB Wasm page, which every call touches (`service::state_slot`; the
/// canister's macro checks the fit when it compiles). A table of 1,000,000 users of 100-byte
/// names with its name index, filled in random order, takes about 4,800 leaves: the heap still
/// holds them. With 5,460 leaves a group and a few hundred users a leaf, 5,107 groups hold
/// billions of users, more than stable memory can.
pub const INLINE_ENTRIES: usize = 5_107;

/// Entries moved or written at a time, through a buffer on the stack (a heap buffer would
/// touch heap pages, docs/metering.md §6).
const CHUNK_ENTRIES: usize = 128;

/// One entry: the lowest key of a leaf (or of a group's first leaf) and its page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Entry {
    /// The lowest key the leaf (group) may hold.
    pub key: u64,
    /// Its page.
    pub page: PageNo,
}

impl Entry {
    /// The entry in its 12 stored bytes.
    pub fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut bytes = [0; ENTRY_BYTES];
        bytes[..8].copy_from_slice(&{ self.key }.to_le_bytes());
        bytes[8..].copy_from_slice(&{ self.page }.to_le_bytes());
        bytes
    }

    /// The entry stored in `bytes` (at least 12).
    pub fn from_bytes(bytes: &[u8]) -> Entry {
        let mut key = [0; 8];
        let mut page = [0; 4];
        key.copy_from_slice(&bytes[..8]);
        page.copy_from_slice(&bytes[8..ENTRY_BYTES]);
        Entry {
            key: u64::from_le_bytes(key),
            page: u32::from_le_bytes(page),
        }
    }
}

pub fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::storage("reading the page tree's index", what)
}

/// The entry count of the group on `page`, checked against the page's room.
pub fn group_len(memory: &impl Memory, page: PageNo) -> Result<usize, StoreError> {
    let mut head = [0u8; GROUP_COUNT + 2];
    page::read(memory, page, 0, &mut head);
    let len = usize::from(u16::from_le_bytes([
        head[GROUP_COUNT],
        head[GROUP_COUNT + 1],
    ]));
    if head[0] != KIND_GROUP || len > ENTRIES_PER_GROUP {
        return Err(corrupt(format!("page {page} is not an index page")));
    }
    Ok(len)
}

/// Records the entry count of the group on `page` (and marks the page as an index page).
pub fn set_group_len(memory: &impl Memory, page: PageNo, len: usize) {
    // `len` never exceeds ENTRIES_PER_GROUP (5,460), which a u16 holds.
    page::write(memory, page, 0, &[KIND_GROUP]);
    page::write_u16(memory, page, GROUP_COUNT, len as u16);
}

/// Where the entry at `slot` starts in a group.
fn group_offset(slot: usize) -> usize {
    GROUP_ENTRIES + slot * ENTRY_BYTES
}

/// The entry at `slot` of the group on `page`.
pub fn group_entry(memory: &impl Memory, page: PageNo, slot: usize) -> Entry {
    let mut bytes = [0u8; ENTRY_BYTES];
    page::read(memory, page, group_offset(slot), &mut bytes);
    Entry::from_bytes(&bytes)
}

/// The key at `slot` of the group on `page`.
pub fn group_key(memory: &impl Memory, page: PageNo, slot: usize) -> u64 {
    page::read_u64(memory, page, group_offset(slot))
}

/// Writes `entries` to the group on `page` from `slot` on.
pub fn write_entries(memory: &impl Memory, page: PageNo, slot: usize, entries: &[Entry]) {
    let mut chunk = [0u8; CHUNK_ENTRIES * ENTRY_BYTES];
    for (number, part) in entries.chunks(CHUNK_ENTRIES).enumerate() {
        for (at, entry) in part.iter().enumerate() {
            chunk[at * ENTRY_BYTES..(at + 1) * ENTRY_BYTES].copy_from_slice(&entry.to_bytes());
        }
        let first = slot + number * CHUNK_ENTRIES;
        page::write(
            memory,
            page,
            group_offset(first),
            &chunk[..part.len() * ENTRY_BYTES],
        );
    }
}

/// Moves the entries `from..to` of the group on `page` by `by` slots (up or down), through
/// the stack.
pub fn shift_entries(memory: &impl Memory, page: PageNo, from: usize, to: usize, by: isize) {
    let mut chunk = [0u8; CHUNK_ENTRIES * ENTRY_BYTES];
    let count = to.saturating_sub(from);
    let mut moved = 0;
    while moved < count {
        let n = CHUNK_ENTRIES.min(count - moved);
        // Moving up, the highest entries go first; moving down, the lowest.
        let start = if by > 0 { to - moved - n } else { from + moved };
        let bytes = &mut chunk[..n * ENTRY_BYTES];
        page::read(memory, page, group_offset(start), bytes);
        let target = start.wrapping_add_signed(by);
        page::write(memory, page, group_offset(target), bytes);
        moved += n;
    }
}

/// Copies the entries `from..to` of the group on `source` to the group on `target` from slot
/// 0 on.
pub fn copy_entries(memory: &impl Memory, source: PageNo, from: usize, to: usize, target: PageNo) {
    let mut chunk = [0u8; CHUNK_ENTRIES * ENTRY_BYTES];
    let mut at = from;
    while at < to {
        let n = CHUNK_ENTRIES.min(to - at);
        let bytes = &mut chunk[..n * ENTRY_BYTES];
        page::read(memory, source, group_offset(at), bytes);
        page::write(memory, target, group_offset(at - from), bytes);
        at += n;
    }
}

/// The entries of the group on `page`, checked: keys ascending, pages inside the store.
pub fn read_group(
    memory: &impl Memory,
    page: PageNo,
    page_count: u32,
) -> Result<Vec<Entry>, StoreError> {
    let len = group_len(memory, page)?;
    let mut bytes = vec![0u8; len * ENTRY_BYTES];
    page::read(memory, page, GROUP_ENTRIES, &mut bytes);
    let entries: Vec<Entry> = bytes.chunks(ENTRY_BYTES).map(Entry::from_bytes).collect();
    check_entries(&entries, page_count)?;
    Ok(entries)
}

/// Refuses entries out of key order or pointing outside the store.
pub fn check_entries(entries: &[Entry], page_count: u32) -> Result<(), StoreError> {
    for (at, entry) in entries.iter().enumerate() {
        let page = entry.page;
        if page == 0 || page >= page_count {
            return Err(corrupt(format!("entry {at} points to page {page}")));
        }
        if at > 0 && { entries[at - 1].key } >= { entry.key } {
            return Err(corrupt(format!("entry {at} is out of key order")));
        }
    }
    Ok(())
}
