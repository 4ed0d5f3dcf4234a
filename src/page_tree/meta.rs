//! The page tree's header (page 0), the allocation of pages, and the reading of an earlier
//! layout.
//!
//! ```text
//! header, page 0
//! 0..8     magic "USRPTRE1"
//! 8..12    layout version (2; 1 is read and converted, below)
//! 12..16   pages the store uses, the header included
//! 16..20   the first free page (0: none)
//! 20..24   leaves
//! 24..32   rows, exact only while the next field is 1
//! 32       1 when `rows` is exact (written by close, before an upgrade); 0 once reopened
//! 33       1 once the table holds its by-name index (`crate::name_index`); 0 in a table
//!          written before
//! 36..40   groups (index pages)
//! 40..     the index's upper level: per group, the lowest key of its first leaf (u64) and
//!          its page (u32); at most 5,107 groups (`group::INLINE_ENTRIES`)
//! free page: kind 2, then the next free page (u32 at 4)
//! ```
//! The groups' layout is in [`super::group`].
//!
//! Layout 1 (the release before) had one level: the header listed index pages (u32 each
//! from 40) that held every leaf's entry, 5,461 a page, packed in key order, and an open read
//! them all. An open of layout 1 converts it once to layout 2 (a few index pages rewritten,
//! no leaf touched), so a canister upgrades and keeps every row.

use super::group::{self, Entry, ENTRIES_PER_GROUP, ENTRY_BYTES, INLINE_ENTRIES};
use super::page::{self, PageNo, PAGE_BYTES};
use crate::error::StoreError;
use ic_stable_structures::Memory;

/// The first bytes of the store's memory.
const MAGIC: &[u8; 8] = b"USRPTRE1";

/// The layout version this code writes.
const VERSION: u32 = 2;

/// The earlier layout, which this code converts.
const VERSION_ONE: u32 = 1;

/// The kind byte of a free page.
const KIND_FREE: u8 = 2;

/// Header offsets.
const PAGE_COUNT: usize = 12;
const FREE_HEAD: usize = 16;
const LEAF_COUNT: usize = 20;
const ROWS: usize = 24;
const ROWS_EXACT: usize = 32;
const NAMES_INDEXED: usize = 33;
const GROUP_COUNT: usize = 36;
const GROUPS: usize = 40;

/// Layout 1: entries per index page, and the most index pages its header could list.
const V1_ENTRIES_PER_PAGE: usize = PAGE_BYTES / ENTRY_BYTES;
const V1_MAX_INDEX_PAGES: usize = (PAGE_BYTES - GROUPS) / 4;

/// Leaves a group gets when layout 1 is converted: three quarters full, so that the splits
/// that follow do not split every group at once.
const CONVERTED_PER_GROUP: usize = ENTRIES_PER_GROUP * 3 / 4;

/// What the header holds besides the row count and the index, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    page_count: u32,
    free_head: PageNo,
}

/// What an open finds in the header (the index is built from it by `super::index`).
pub struct Opened {
    /// The header.
    pub meta: Meta,
    /// The index's upper level: one entry per group.
    pub groups: Vec<Entry>,
    /// Leaves the header counts.
    pub leaves: usize,
    /// The row count, if the header's is exact.
    pub rows: Option<u64>,
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::storage("opening the page tree", what)
}

impl Meta {
    /// Reads the header of the store in `memory`, or creates an empty store if the memory is
    /// empty. Refuses memory that holds anything else, writing nothing. Reads the header
    /// alone, at any table size (layout 1 excepted: its first open reads its whole index
    /// once, to convert it).
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
            };
            page::write(memory, 0, 0, MAGIC);
            page::write_u32(memory, 0, 8, VERSION);
            meta.write(memory, 0);
            page::write_u32(memory, 0, GROUP_COUNT, 0);
            page::write_u64(memory, 0, ROWS, 0);
            return Ok(Opened {
                meta,
                groups: Vec::new(),
                leaves: 0,
                rows: Some(0),
            });
        }
        let mut magic = [0; 8];
        page::read(memory, 0, 0, &mut magic);
        if &magic != MAGIC {
            return Err(corrupt("the memory holds something else than a page tree"));
        }
        let version = page::read_u32(memory, 0, 8);
        let page_count = page::read_u32(memory, 0, PAGE_COUNT);
        let leaves = page::read_u32(memory, 0, LEAF_COUNT) as usize;
        if u64::from(page_count) > memory.size() || page_count == 0 {
            return Err(corrupt("impossible header"));
        }
        let mut meta = Meta {
            page_count,
            free_head: page::read_u32(memory, 0, FREE_HEAD),
        };
        let groups = match version {
            VERSION => read_groups(memory)?,
            VERSION_ONE => meta.convert_layout_one(memory, leaves)?,
            other => {
                return Err(corrupt(format!(
                    "layout version {other}; this code reads versions {VERSION_ONE} and {VERSION}"
                )))
            }
        };
        let mut exact = [0; 1];
        page::read(memory, 0, ROWS_EXACT, &mut exact);
        let rows = (exact[0] == 1).then(|| page::read_u64(memory, 0, ROWS));
        Ok(Opened {
            meta,
            groups,
            leaves,
            rows,
        })
    }

    /// Pages the store uses, the header included.
    pub fn page_count(&self) -> u32 {
        self.page_count
    }

    /// `page` if a leaf can be there (neither the header nor past the pages in use): an index
    /// entry read from a corrupt page must not send a lookup to the header or to memory
    /// the store does not use.
    pub fn leaf_page(&self, page: PageNo) -> Result<PageNo, StoreError> {
        if page == 0 || page >= self.page_count {
            return Err(StoreError::storage(
                "reading the page tree's index",
                format!("leaf page {page} is impossible"),
            ));
        }
        Ok(page)
    }

    /// Converts a layout-1 store to layout 2: its index pages go to the free pages and its
    /// entries into groups; returns the groups.
    fn convert_layout_one(
        &mut self,
        memory: &impl Memory,
        leaves: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let index_page_count = page::read_u32(memory, 0, GROUP_COUNT) as usize;
        if index_page_count > V1_MAX_INDEX_PAGES || leaves > index_page_count * V1_ENTRIES_PER_PAGE
        {
            return Err(corrupt("impossible header"));
        }
        let index_pages: Vec<PageNo> = (0..index_page_count)
            .map(|i| page::read_u32(memory, 0, GROUPS + 4 * i))
            .collect();
        let mut entries = Vec::with_capacity(leaves);
        let mut bytes = [0; ENTRY_BYTES];
        for position in 0..leaves {
            let page = index_pages[position / V1_ENTRIES_PER_PAGE];
            let offset = (position % V1_ENTRIES_PER_PAGE) * ENTRY_BYTES;
            page::read(memory, page, offset, &mut bytes);
            entries.push(Entry::from_bytes(&bytes));
        }
        group::check_entries(&entries, self.page_count)?;
        if entries.first().is_some_and(|first| first.key != 0) {
            return Err(corrupt("the first leaf's key is not 0"));
        }
        let groups_needed = leaves.div_ceil(CONVERTED_PER_GROUP);
        if groups_needed > INLINE_ENTRIES {
            return Err(corrupt("more leaves than an index holds"));
        }
        for page in index_pages.iter().rev() {
            if *page == 0 || *page >= self.page_count {
                return Err(corrupt(format!("index page {page} is impossible")));
            }
            self.free(memory, *page, leaves);
        }
        let mut groups = Vec::with_capacity(groups_needed);
        for part in entries.chunks(CONVERTED_PER_GROUP) {
            let page = self.allocate(memory, leaves)?;
            group::write_entries(memory, page, 0, part);
            group::set_group_len(memory, page, part.len());
            groups.push(Entry {
                key: part[0].key,
                page,
            });
        }
        self.write_groups(memory, &groups, 0, groups.len());
        page::write_u32(memory, 0, 8, VERSION);
        Ok(groups)
    }

    /// Writes the header's page fields and `leaves`.
    fn write(&self, memory: &impl Memory, leaves: usize) {
        let mut fields = [0u8; 12];
        fields[0..4].copy_from_slice(&self.page_count.to_le_bytes());
        fields[4..8].copy_from_slice(&self.free_head.to_le_bytes());
        fields[8..12].copy_from_slice(&(leaves as u32).to_le_bytes());
        page::write(memory, 0, PAGE_COUNT, &fields);
    }

    /// Records the number of leaves.
    pub fn write_leaves(&self, memory: &impl Memory, leaves: usize) {
        page::write_u32(memory, 0, LEAF_COUNT, leaves as u32);
    }

    /// Writes the upper level's `entries` from group `from` on, and the group count `groups`.
    pub fn write_groups(
        &self,
        memory: &impl Memory,
        entries: &[Entry],
        from: usize,
        groups: usize,
    ) {
        let mut chunk = [0u8; 64 * ENTRY_BYTES];
        for (number, part) in entries.chunks(64).enumerate() {
            for (at, entry) in part.iter().enumerate() {
                chunk[at * ENTRY_BYTES..(at + 1) * ENTRY_BYTES].copy_from_slice(&entry.to_bytes());
            }
            let first = from + number * 64;
            page::write(
                memory,
                0,
                GROUPS + first * ENTRY_BYTES,
                &chunk[..part.len() * ENTRY_BYTES],
            );
        }
        page::write_u32(memory, 0, GROUP_COUNT, groups as u32);
    }

    /// Records `rows` as exact (before an upgrade) or, with `None`, marks the count in the
    /// header as stale (once the store is open and writes may change it).
    pub fn write_rows(memory: &impl Memory, rows: Option<u64>) {
        if let Some(rows) = rows {
            page::write_u64(memory, 0, ROWS, rows);
        }
        page::write(memory, 0, ROWS_EXACT, &[u8::from(rows.is_some())]);
    }

    /// Whether the table holds its by-name index.
    pub fn names_indexed(memory: &impl Memory) -> bool {
        let mut flag = [0; 1];
        page::read(memory, 0, NAMES_INDEXED, &mut flag);
        flag[0] == 1
    }

    /// Records that the table holds its by-name index.
    pub fn mark_names_indexed(memory: &impl Memory) {
        page::write(memory, 0, NAMES_INDEXED, &[1]);
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
}

/// The upper level the header lists.
fn read_groups(memory: &impl Memory) -> Result<Vec<Entry>, StoreError> {
    let groups = page::read_u32(memory, 0, GROUP_COUNT) as usize;
    if groups > INLINE_ENTRIES {
        return Err(corrupt("impossible header"));
    }
    let mut bytes = vec![0u8; groups * ENTRY_BYTES];
    page::read(memory, 0, GROUPS, &mut bytes);
    Ok(bytes.chunks(ENTRY_BYTES).map(Entry::from_bytes).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    #[test]
    fn the_row_count_round_trips_and_foreign_memory_is_refused() {
        let memory = VectorMemory::default();
        let opened = Meta::open(&memory).unwrap();
        assert_eq!(opened.rows, Some(0));
        Meta::write_rows(&memory, Some(42));
        assert_eq!(Meta::open(&memory).unwrap().rows, Some(42));
        Meta::write_rows(&memory, None);
        assert_eq!(Meta::open(&memory).unwrap().rows, None);

        let foreign = VectorMemory::default();
        foreign.grow(1);
        foreign.write(0, b"BTR");
        assert!(Meta::open(&foreign).is_err());
    }

    #[test]
    fn an_unknown_layout_version_is_refused_and_left_as_it_was() {
        let memory = VectorMemory::default();
        Meta::open(&memory).unwrap();
        page::write_u32(&memory, 0, 8, 3);
        let before = memory.borrow().clone();
        let error = Meta::open(&memory).err().unwrap();
        assert!(error.to_string().contains("layout version 3"), "{error}");
        assert_eq!(*memory.borrow(), before);
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
