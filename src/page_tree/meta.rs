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

/// Index entries per index page.
const ENTRIES_PER_PAGE: usize = PAGE_BYTES / ENTRY_BYTES;

/// Most index pages the header can list: with 5,461 leaves each, about 89 million leaves.
const MAX_INDEX_PAGES: usize = (PAGE_BYTES - INDEX_PAGES) / 4;

/// The leaves in key order: the lowest key each may hold, and its page. The first key is
/// always 0, so every id has a leaf once there is one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    keys: Vec<u64>,
    pages: Vec<PageNo>,
}

impl Index {
    /// Leaves.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The position and page of the leaf that holds (or would hold) `id`; `None` when there
    /// is no leaf.
    pub fn leaf_for(&self, id: u64) -> Option<(usize, PageNo)> {
        let after = self.keys.partition_point(|key| *key <= id);
        let position = after.checked_sub(1)?;
        Some((position, self.pages[position]))
    }

    /// The page of the leaf at `position`.
    pub fn page(&self, position: usize) -> Option<PageNo> {
        self.pages.get(position).copied()
    }

    /// Adds a leaf at `position`.
    pub fn insert(&mut self, position: usize, key: u64, page: PageNo) {
        self.keys.insert(position, key);
        self.pages.insert(position, page);
    }

    /// Removes the leaf at `position`; the first leaf's key stays 0.
    pub fn remove(&mut self, position: usize) {
        self.keys.remove(position);
        self.pages.remove(position);
        if let Some(first) = self.keys.first_mut() {
            *first = 0;
        }
    }

    /// Sets the lowest key of the leaf at `position` (not the first leaf's, always 0).
    pub fn set_key(&mut self, position: usize, key: u64) {
        if position > 0 {
            self.keys[position] = key;
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
            if leaf == 0 || leaf >= self.page_count || index.keys.last().is_some_and(|k| *k >= key)
            {
                return Err(corrupt(format!("index entry {position} is impossible")));
            }
            index.keys.push(key);
            index.pages.push(leaf);
        }
        if index.keys.first().is_some_and(|first| *first != 0) {
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
            let mut bytes = Vec::with_capacity((end - start) * ENTRY_BYTES);
            for position in start..end {
                bytes.extend_from_slice(&index.keys[position].to_le_bytes());
                bytes.extend_from_slice(&index.pages[position].to_le_bytes());
            }
            page::write(
                memory,
                *page,
                (start % ENTRIES_PER_PAGE) * ENTRY_BYTES,
                &bytes,
            );
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
