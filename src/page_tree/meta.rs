//! The page tree's header (page 0) and its index of leaves (pages of its own), and the
//! allocation of pages.
//!
//! ```text
//! header, page 0
//! 0..8     magic "USRPTRE1"
//! 8..12    layout version (1)
//! 12..16   pages the store uses, the header included
//! 16..20   the first free page (0: none)
//! 20..24   leaves
//! 24..32   rows, exact only while the next field is 1
//! 32       1 when `rows` is exact (written by close, before an upgrade); 0 once reopened
//! 36..40   index pages
//! 40..     the index pages' numbers, u32 each
//! index pages: one entry per leaf, in key order, 12 bytes each
//!          (lowest key of the leaf: u64, its page: u32); 5,461 entries a page
//! free page: kind 2, then the next free page (u32 at 4)
//! ```
//!
//! The index lives in the heap too ([`Index`]): a lookup reads no stable memory. Stable
//! memory holds it for the next open; it is written only when leaves are added or removed
//! (a split, a merge), which a few hundred inserts share.

use super::page::{self, PageNo, PAGE_BYTES};
use crate::error::StoreError;
use ic_stable_structures::Memory;

/// The first bytes of the store's memory.
const MAGIC: &[u8; 8] = b"USRPTRE1";

/// The layout version this code reads and writes.
const VERSION: u32 = 1;

/// The kind byte of a free page.
const KIND_FREE: u8 = 2;

/// Header offsets.
const PAGE_COUNT: usize = 12;
const FREE_HEAD: usize = 16;
const LEAF_COUNT: usize = 20;
const ROWS: usize = 24;
const ROWS_EXACT: usize = 32;
const INDEX_PAGE_COUNT: usize = 36;
const INDEX_PAGES: usize = 40;

/// Bytes of one index entry.
const ENTRY_BYTES: usize = 12;

/// Index entries written at a time.
const CHUNK_ENTRIES: usize = 128;

/// Index entries per index page.
const ENTRIES_PER_PAGE: usize = PAGE_BYTES / ENTRY_BYTES;

/// Most index pages the header can list: with 5,461 leaves each, about 89 million leaves.
const MAX_INDEX_PAGES: usize = (PAGE_BYTES - INDEX_PAGES) / 4;

/// The leaves in key order: the lowest key each may hold, and its page. The first key is
/// always 0, so every id has a leaf once there is one.
///
/// Up to [`INLINE_ENTRIES`] leaves (about 2.4 million users of 100-byte names) the entries
/// are held inside the store itself, which a canister keeps in a 64 KiB-aligned static beside
/// the rest of its state: a lookup touches no heap page of its own (docs/metering.md §6).
/// Past that they move to one heap allocation aligned to a Wasm page.
pub struct Index {
    len: usize,
    inline: [Entry; INLINE_ENTRIES],
    heap: Option<AlignedEntries>,
}

impl Default for Index {
    fn default() -> Self {
        Index {
            len: 0,
            inline: [Entry { key: 0, page: 0 }; INLINE_ENTRIES],
            heap: None,
        }
    }
}

/// One leaf of the index: 12 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
struct Entry {
    key: u64,
    page: PageNo,
}

/// Entries of the index held inside the store: 48 KiB, most of a Wasm page.
pub const INLINE_ENTRIES: usize = 4_096;

/// Entries of the index in one 64 KiB Wasm page.
pub const ENTRIES_PER_WASM_PAGE: usize = PAGE_BYTES / std::mem::size_of::<Entry>();

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries()).finish()
    }
}

impl PartialEq for Index {
    fn eq(&self, other: &Self) -> bool {
        self.entries() == other.entries()
    }
}

impl Eq for Index {}

impl Index {
    /// The entries in use.
    fn entries(&self) -> &[Entry] {
        match &self.heap {
            Some(heap) => heap.as_slice(),
            None => &self.inline[..self.len],
        }
    }

    fn entries_mut(&mut self) -> &mut [Entry] {
        match &mut self.heap {
            Some(heap) => heap.as_mut_slice(),
            None => &mut self.inline[..self.len],
        }
    }

    /// Leaves.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The position and page of the leaf that holds (or would hold) `id`; `None` when there
    /// is no leaf.
    pub fn leaf_for(&self, id: u64) -> Option<(usize, PageNo)> {
        let entries = self.entries();
        let after = entries.partition_point(|entry| ({ entry.key }) <= id);
        let position = after.checked_sub(1)?;
        Some((position, entries[position].page))
    }

    /// The page of the leaf at `position`.
    pub fn page(&self, position: usize) -> Option<PageNo> {
        self.entries().get(position).map(|entry| entry.page)
    }

    /// Adds a leaf at `position`.
    pub fn insert(&mut self, position: usize, key: u64, page: PageNo) {
        let entry = Entry { key, page };
        if let Some(heap) = &mut self.heap {
            return heap.insert(position, entry);
        }
        if self.len == INLINE_ENTRIES {
            // Out of room inside the store: every entry moves to the heap.
            let mut heap = AlignedEntries::default();
            for (at, moved) in self.inline.iter().enumerate() {
                heap.insert(at, *moved);
            }
            heap.insert(position, entry);
            self.heap = Some(heap);
            return;
        }
        assert!(position <= self.len, "an index position past its end");
        self.inline.copy_within(position..self.len, position + 1);
        self.inline[position] = entry;
        self.len += 1;
    }

    /// Removes the leaf at `position`; the first leaf's key stays 0.
    pub fn remove(&mut self, position: usize) {
        match &mut self.heap {
            Some(heap) => heap.remove(position),
            None => {
                assert!(position < self.len, "an index position past its end");
                self.inline.copy_within(position + 1..self.len, position);
                self.len -= 1;
            }
        }
        if let Some(first) = self.entries_mut().first_mut() {
            first.key = 0;
        }
    }

    /// Sets the lowest key of the leaf at `position` (not the first leaf's, always 0).
    pub fn set_key(&mut self, position: usize, key: u64) {
        if position > 0 {
            self.entries_mut()[position].key = key;
        }
    }

    /// The key and page of the leaf at `position`.
    fn entry(&self, position: usize) -> Entry {
        self.entries()[position]
    }
}

/// A growable array of entries in an allocation aligned to, and sized in, 64 KiB Wasm pages.
struct AlignedEntries {
    pointer: std::ptr::NonNull<Entry>,
    /// Entries the allocation holds.
    capacity: usize,
    /// Entries in use.
    len: usize,
}

impl Default for AlignedEntries {
    fn default() -> Self {
        AlignedEntries {
            pointer: std::ptr::NonNull::dangling(),
            capacity: 0,
            len: 0,
        }
    }
}

impl AlignedEntries {
    /// The layout of an allocation of `capacity` entries (a multiple of a Wasm page's worth).
    fn layout(capacity: usize) -> std::alloc::Layout {
        let bytes = capacity * std::mem::size_of::<Entry>();
        // PAGE_BYTES is a power of two and the sizes stay far below isize::MAX.
        std::alloc::Layout::from_size_align(bytes, PAGE_BYTES).expect("an index's layout")
    }

    fn as_slice(&self) -> &[Entry] {
        // SAFETY: `pointer` holds `capacity` entries, of which the first `len` are initialized
        // (or is dangling with `len` 0, which a slice of length 0 allows).
        unsafe { std::slice::from_raw_parts(self.pointer.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [Entry] {
        // SAFETY: as in `as_slice`; `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.as_ptr(), self.len) }
    }

    /// Makes room for one more entry, growing by whole Wasm pages' worth of entries.
    fn reserve_one(&mut self) {
        if self.len < self.capacity {
            return;
        }
        let capacity = (self.capacity * 2).max(ENTRIES_PER_WASM_PAGE);
        let layout = Self::layout(capacity);
        // SAFETY: the layout's size is not zero.
        let fresh = unsafe { std::alloc::alloc(layout) }.cast::<Entry>();
        let Some(fresh) = std::ptr::NonNull::new(fresh) else {
            std::alloc::handle_alloc_error(layout)
        };
        if self.capacity > 0 {
            // SAFETY: both allocations hold at least `len` entries and do not overlap; the old
            // one was allocated with `layout(self.capacity)`.
            unsafe {
                std::ptr::copy_nonoverlapping(self.pointer.as_ptr(), fresh.as_ptr(), self.len);
                std::alloc::dealloc(self.pointer.as_ptr().cast(), Self::layout(self.capacity));
            }
        }
        self.pointer = fresh;
        self.capacity = capacity;
    }

    fn insert(&mut self, position: usize, entry: Entry) {
        assert!(position <= self.len, "an index position past its end");
        self.reserve_one();
        // SAFETY: `position <= len < capacity`: the entries from `position` move one up within
        // the allocation, and the one written is in it.
        unsafe {
            let at = self.pointer.as_ptr().add(position);
            std::ptr::copy(at, at.add(1), self.len - position);
            at.write(entry);
        }
        self.len += 1;
    }

    fn remove(&mut self, position: usize) {
        assert!(position < self.len, "an index position past its end");
        // SAFETY: `position < len`: the entries after it move one down within the allocation.
        unsafe {
            let at = self.pointer.as_ptr().add(position);
            std::ptr::copy(at.add(1), at, self.len - position - 1);
        }
        self.len -= 1;
    }
}

impl Drop for AlignedEntries {
    fn drop(&mut self) {
        if self.capacity > 0 {
            // SAFETY: allocated by `reserve_one` with this layout.
            unsafe {
                std::alloc::dealloc(self.pointer.as_ptr().cast(), Self::layout(self.capacity))
            }
        }
    }
}

/// What the header holds besides the row count, as the store keeps it in the heap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    page_count: u32,
    free_head: PageNo,
    index_pages: Vec<PageNo>,
}

/// What an open finds.
pub struct Opened {
    /// The header.
    pub meta: Meta,
    /// The leaves.
    pub index: Index,
    /// The row count, if the header's is exact.
    pub rows: Option<u64>,
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::storage("opening the page tree", what)
}

impl Meta {
    /// Reads the store in `memory`, or creates an empty one if the memory is empty. Refuses
    /// memory that holds anything else, writing nothing.
    pub fn open(memory: &impl Memory) -> Result<Opened, StoreError> {
        if memory.size() == 0 {
            if memory.grow(1) < 0 {
                return Err(StoreError::storage(
                    "creating the page tree",
                    "stable memory cannot grow",
                ));
            }
            let meta = Meta {
                page_count: 1,
                free_head: 0,
                index_pages: Vec::new(),
            };
            page::write(memory, 0, 0, MAGIC);
            page::write_u32(memory, 0, 8, VERSION);
            meta.write(memory, 0);
            page::write_u64(memory, 0, ROWS, 0);
            return Ok(Opened {
                meta,
                index: Index::default(),
                rows: Some(0),
            });
        }
        let mut magic = [0; 8];
        page::read(memory, 0, 0, &mut magic);
        if &magic != MAGIC {
            return Err(corrupt("the memory holds something else than a page tree"));
        }
        let version = page::read_u32(memory, 0, 8);
        if version != VERSION {
            return Err(corrupt(format!(
                "layout version {version}; this code reads version {VERSION}"
            )));
        }
        let page_count = page::read_u32(memory, 0, PAGE_COUNT);
        let leaves = page::read_u32(memory, 0, LEAF_COUNT) as usize;
        let index_page_count = page::read_u32(memory, 0, INDEX_PAGE_COUNT) as usize;
        if u64::from(page_count) > memory.size()
            || index_page_count > MAX_INDEX_PAGES
            || leaves > index_page_count * ENTRIES_PER_PAGE
        {
            return Err(corrupt("impossible header"));
        }
        let index_pages: Vec<PageNo> = (0..index_page_count)
            .map(|i| page::read_u32(memory, 0, INDEX_PAGES + 4 * i))
            .collect();
        let meta = Meta {
            page_count,
            free_head: page::read_u32(memory, 0, FREE_HEAD),
            index_pages,
        };
        let index = meta.read_index(memory, leaves)?;
        let mut exact = [0; 1];
        page::read(memory, 0, ROWS_EXACT, &mut exact);
        let rows = (exact[0] == 1).then(|| page::read_u64(memory, 0, ROWS));
        Ok(Opened { meta, index, rows })
    }

    /// The index's `leaves` entries, from its pages.
    fn read_index(&self, memory: &impl Memory, leaves: usize) -> Result<Index, StoreError> {
        let mut index = Index::default();
        let mut entry = [0; ENTRY_BYTES];
        for position in 0..leaves {
            let page = self.index_pages[position / ENTRIES_PER_PAGE];
            let offset = (position % ENTRIES_PER_PAGE) * ENTRY_BYTES;
            page::read(memory, page, offset, &mut entry);
            let key = u64::from_le_bytes([
                entry[0], entry[1], entry[2], entry[3], entry[4], entry[5], entry[6], entry[7],
            ]);
            let leaf = u32::from_le_bytes([entry[8], entry[9], entry[10], entry[11]]);
            let last = index.len().checked_sub(1).map(|last| index.entry(last).key);
            let last: Option<u64> = last;
            if leaf == 0 || leaf >= self.page_count || last.is_some_and(|k| k >= key) {
                return Err(corrupt(format!("index entry {position} is impossible")));
            }
            index.insert(index.len(), key, leaf);
        }
        if !index.is_empty() && ({ index.entry(0).key }) != 0 {
            return Err(corrupt("the first leaf's key is not 0"));
        }
        Ok(index)
    }

    /// Writes the header's page fields and `leaves`.
    fn write(&self, memory: &impl Memory, leaves: usize) {
        let mut fields = [0u8; 12];
        fields[0..4].copy_from_slice(&self.page_count.to_le_bytes());
        fields[4..8].copy_from_slice(&self.free_head.to_le_bytes());
        fields[8..12].copy_from_slice(&(leaves as u32).to_le_bytes());
        page::write(memory, 0, PAGE_COUNT, &fields);
    }

    /// Records `rows` as exact (before an upgrade) or, with `None`, marks the count in the
    /// header as stale (once the store is open and writes may change it).
    pub fn write_rows(memory: &impl Memory, rows: Option<u64>) {
        if let Some(rows) = rows {
            page::write_u64(memory, 0, ROWS, rows);
        }
        page::write(memory, 0, ROWS_EXACT, &[u8::from(rows.is_some())]);
    }

    /// A page for a new leaf or index page: a free one, or one more at the end.
    pub fn allocate(&mut self, memory: &impl Memory, leaves: usize) -> Result<PageNo, StoreError> {
        let page = if self.free_head != 0 {
            let page = self.free_head;
            self.free_head = page::read_u32(memory, page, 4);
            page
        } else {
            let page = self.page_count;
            if memory.size() <= u64::from(page) && memory.grow(1) < 0 {
                return Err(StoreError::storage(
                    "adding a page to the page tree",
                    "stable memory cannot grow",
                ));
            }
            self.page_count += 1;
            page
        };
        self.write(memory, leaves);
        Ok(page)
    }

    /// Returns `page` to the free pages.
    pub fn free(&mut self, memory: &impl Memory, page: PageNo, leaves: usize) {
        let mut head = [0u8; 8];
        head[0] = KIND_FREE;
        head[4..8].copy_from_slice(&self.free_head.to_le_bytes());
        page::write(memory, page, 0, &head);
        self.free_head = page;
        self.write(memory, leaves);
    }

    /// Writes the entries of `index` from position `from` on to the index pages (adding
    /// pages as the index grows), and the leaf count.
    pub fn write_index(
        &mut self,
        memory: &impl Memory,
        index: &Index,
        from: usize,
    ) -> Result<(), StoreError> {
        let needed = index.len().div_ceil(ENTRIES_PER_PAGE);
        if needed > MAX_INDEX_PAGES {
            return Err(StoreError::storage(
                "adding a leaf to the page tree",
                "the index is full",
            ));
        }
        while self.index_pages.len() < needed {
            let page = self.allocate(memory, index.len())?;
            let position = self.index_pages.len();
            page::write_u32(memory, 0, INDEX_PAGES + 4 * position, page);
            self.index_pages.push(page);
            page::write_u32(memory, 0, INDEX_PAGE_COUNT, self.index_pages.len() as u32);
        }
        let first_page = from / ENTRIES_PER_PAGE;
        for (number, page) in self.index_pages.iter().enumerate().skip(first_page) {
            let start = (number * ENTRIES_PER_PAGE).max(from);
            let end = ((number + 1) * ENTRIES_PER_PAGE).min(index.len());
            if start >= end {
                break;
            }
            // Through a buffer on the stack: a heap buffer would touch heap pages
            // (docs/metering.md §6).
            let mut chunk = [0u8; CHUNK_ENTRIES * ENTRY_BYTES];
            let mut offset = (start % ENTRIES_PER_PAGE) * ENTRY_BYTES;
            let mut position = start;
            while position < end {
                let count = CHUNK_ENTRIES.min(end - position);
                for slot in 0..count {
                    let Entry { key, page } = index.entry(position + slot);
                    let at = slot * ENTRY_BYTES;
                    chunk[at..at + 8].copy_from_slice(&key.to_le_bytes());
                    chunk[at + 8..at + ENTRY_BYTES].copy_from_slice(&page.to_le_bytes());
                }
                page::write(memory, *page, offset, &chunk[..count * ENTRY_BYTES]);
                offset += count * ENTRY_BYTES;
                position += count;
            }
        }
        self.write(memory, index.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    #[test]
    fn an_index_finds_the_leaf_of_every_id() {
        let mut index = Index::default();
        assert_eq!(index.leaf_for(5), None);
        index.insert(0, 0, 3);
        index.insert(1, 100, 4);
        index.insert(2, 200, 5);
        assert_eq!(index.leaf_for(0), Some((0, 3)));
        assert_eq!(index.leaf_for(99), Some((0, 3)));
        assert_eq!(index.leaf_for(100), Some((1, 4)));
        assert_eq!(index.leaf_for(u64::MAX), Some((2, 5)));
        index.remove(0);
        assert_eq!(index.leaf_for(7), Some((0, 4)), "the first key is 0 again");
    }

    #[test]
    fn an_index_past_its_inline_room_moves_to_the_heap_and_keeps_its_order() {
        let mut index = Index::default();
        let leaves = INLINE_ENTRIES + 1_000;
        for position in 0..leaves {
            index.insert(position, position as u64 * 100, position as u32 + 1);
        }
        assert!(index.heap.is_some());
        assert_eq!(index.len(), leaves);
        assert_eq!(index.leaf_for(4_096 * 100 + 50), Some((4_096, 4_097)));
        index.remove(0);
        assert_eq!(index.leaf_for(0), Some((0, 2)), "the first key is 0 again");
        index.insert(1, 150, 9_999);
        assert_eq!(index.leaf_for(160), Some((1, 9_999)));
        assert_eq!(index.leaf_for(200), Some((2, 3)));
    }

    #[test]
    fn the_header_and_index_round_trip_and_foreign_memory_is_refused() {
        let memory = VectorMemory::default();
        let opened = Meta::open(&memory).unwrap();
        assert_eq!(opened.rows, Some(0));
        let mut meta = opened.meta;
        let mut index = Index::default();
        for position in 0..6_000u64 {
            let page = meta.allocate(&memory, index.len()).unwrap();
            index.insert(position as usize, position * 10, page);
        }
        meta.write_index(&memory, &index, 0).unwrap();
        Meta::write_rows(&memory, Some(42));
        let reopened = Meta::open(&memory).unwrap();
        assert_eq!(reopened.index, index);
        assert_eq!(reopened.meta, meta);
        assert_eq!(reopened.rows, Some(42));
        Meta::write_rows(&memory, None);
        assert_eq!(Meta::open(&memory).unwrap().rows, None);

        let foreign = VectorMemory::default();
        foreign.grow(1);
        foreign.write(0, b"BTR");
        assert!(Meta::open(&foreign).is_err());
    }

    #[test]
    fn freed_pages_are_reused() {
        let memory = VectorMemory::default();
        let mut meta = Meta::open(&memory).unwrap().meta;
        let a = meta.allocate(&memory, 0).unwrap();
        let b = meta.allocate(&memory, 0).unwrap();
        meta.free(&memory, a, 0);
        meta.free(&memory, b, 0);
        assert_eq!(meta.allocate(&memory, 0).unwrap(), b);
        assert_eq!(meta.allocate(&memory, 0).unwrap(), a);
        assert_eq!(meta.allocate(&memory, 0).unwrap(), 3);
    }
}
