//! A canister's stable memory: sparse 64 KiB pages with a per-message undo log
//! and the set of 4 KiB pages the current message has dirtied.
//!
//! Only pages that were ever written hold memory; reading an unwritten page
//! yields zeros. Every change made since [`StableMemory::begin`] can be undone
//! with [`StableMemory::rollback`], at a cost proportional to the pages the
//! message touched, not to the size of the memory.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

/// Size of a stable memory page, in bytes (docs/metering.md §5: pages are 64 KiB; also the
/// unit the memory tracker of [`crate::Metering::Current`] charges, §6).
pub const PAGE_SIZE: u64 = 64 * 1024;
/// Size of the pages whose first write in a message is charged under
/// [`crate::Metering::PocketIc13`] (docs/metering.md §6: 4 KiB).
pub const DIRTY_PAGE_SIZE: u64 = 4 * 1024;
/// The largest stable memory, in 64 KiB pages (docs/metering.md §7: 500 GiB).
pub const MAX_PAGES: u64 = 500 * 1024 * 1024 * 1024 / PAGE_SIZE;

/// A page, shared between a memory and its clones (a snapshot, the undo log) until one of
/// them writes it: cloning a memory of gigabytes copies no page.
type Page = Arc<[u8]>;

/// An access outside the current size of stable memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds;

/// Changes of the current message, kept so they can be undone.
#[derive(Debug, Default, Clone)]
struct UndoLog {
    size_at_start: u64,
    /// Content of each 64 KiB page before its first write in this message
    /// (`None`: the page did not exist).
    saved: HashMap<u64, Option<Page>>,
    /// 4 KiB pages written by this message.
    dirty: HashSet<u64>,
    /// 64 KiB pages read or written by this message.
    accessed: HashSet<u64>,
    /// 64 KiB pages whose first write in this message was tracked.
    written: HashSet<u64>,
}

/// Sparse stable memory with message-level transactions.
#[derive(Debug, Default, Clone)]
pub struct StableMemory {
    pages: HashMap<u64, Page>,
    size_pages: u64,
    undo: UndoLog,
}

impl StableMemory {
    /// An empty stable memory (size 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Current size in 64 KiB pages.
    pub fn size_pages(&self) -> u64 {
        self.size_pages
    }

    /// Current size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_pages * PAGE_SIZE
    }

    /// Number of 64 KiB pages that hold data (were ever written).
    pub fn allocated_pages(&self) -> usize {
        self.pages.len()
    }

    /// Grows by `additional` pages; returns the old size, or `None` if the result
    /// would exceed `max_pages` (the ic0 call then returns -1, docs/metering.md §5).
    pub fn grow(&mut self, additional: u64, max_pages: u64) -> Option<u64> {
        let old = self.size_pages;
        let new = old.checked_add(additional)?;
        if new > max_pages.min(MAX_PAGES) {
            return None;
        }
        self.size_pages = new;
        Some(old)
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<(), OutOfBounds> {
        if self.in_bounds(offset, len) {
            Ok(())
        } else {
            Err(OutOfBounds)
        }
    }

    /// Whether `[offset, offset + len)` lies inside the memory.
    pub fn in_bounds(&self, offset: u64, len: u64) -> bool {
        matches!(offset.checked_add(len), Some(end) if end <= self.size_bytes())
    }

    /// Records an access to `[offset, offset + len)` by the current message, a write if
    /// `write`, per 64 KiB page; returns how many pages were accessed, and written, for the
    /// first time in this message (what [`crate::Metering::Current`] charges).
    pub(crate) fn touch_regions(&mut self, offset: u64, len: u64, write: bool) -> (u64, u64) {
        let (mut accessed, mut written) = (0, 0);
        for page in page_range(offset, len, PAGE_SIZE) {
            accessed += u64::from(self.undo.accessed.insert(page));
            if write {
                written += u64::from(self.undo.written.insert(page));
            }
        }
        (accessed, written)
    }

    /// The 64 KiB pages of `[offset, offset + len)` that [`StableMemory::touch_regions`] with
    /// the same arguments would count as first accessed, and as first written: the pages
    /// behind its counts, for the page map of a trace.
    pub(crate) fn untouched_regions(
        &self,
        offset: u64,
        len: u64,
        write: bool,
    ) -> (Vec<u64>, Vec<u64>) {
        let pages = page_range(offset, len, PAGE_SIZE);
        let accessed = pages
            .clone()
            .filter(|page| !self.undo.accessed.contains(page))
            .collect();
        let written = if write {
            pages
                .filter(|page| !self.undo.written.contains(page))
                .collect()
        } else {
            Vec::new()
        };
        (accessed, written)
    }

    /// Copies `dst.len()` bytes starting at `offset` into `dst`.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<(), OutOfBounds> {
        self.check_range(offset, dst.len() as u64)?;
        let mut done = 0usize;
        while done < dst.len() {
            let at = offset + done as u64;
            let (page, within) = (at / PAGE_SIZE, (at % PAGE_SIZE) as usize);
            let n = (PAGE_SIZE as usize - within).min(dst.len() - done);
            match self.pages.get(&page) {
                Some(data) => dst[done..done + n].copy_from_slice(&data[within..within + n]),
                None => dst[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Number of 4 KiB pages of `[offset, offset + len)` not yet dirtied by the
    /// current message (what a write of that range would newly dirty).
    pub fn newly_dirtied(&self, offset: u64, len: u64) -> u64 {
        dirty_range(offset, len)
            .filter(|p| !self.undo.dirty.contains(p))
            .count() as u64
    }

    /// Bytes of stable memory dirtied by the current message (4 KiB granularity).
    pub fn dirty_bytes(&self) -> u64 {
        self.undo.dirty.len() as u64 * DIRTY_PAGE_SIZE
    }

    /// Writes `src` at `offset`, recording what is needed to undo it.
    pub fn write(&mut self, offset: u64, src: &[u8]) -> Result<(), OutOfBounds> {
        self.check_range(offset, src.len() as u64)?;
        self.undo
            .dirty
            .extend(dirty_range(offset, src.len() as u64));
        let mut done = 0usize;
        while done < src.len() {
            let at = offset + done as u64;
            let (page, within) = (at / PAGE_SIZE, (at % PAGE_SIZE) as usize);
            let n = (PAGE_SIZE as usize - within).min(src.len() - done);
            if !self.undo.saved.contains_key(&page) {
                let before = self.pages.get(&page).cloned();
                self.undo.saved.insert(page, before);
            }
            let data = self
                .pages
                .entry(page)
                .or_insert_with(|| Arc::from(vec![0u8; PAGE_SIZE as usize]));
            Arc::make_mut(data)[within..within + n].copy_from_slice(&src[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Starts a message: from now on every change can be rolled back.
    pub fn begin(&mut self) {
        self.undo = UndoLog {
            size_at_start: self.size_pages,
            ..UndoLog::default()
        };
    }

    /// Keeps the changes of the current message.
    pub fn commit(&mut self) {
        self.begin();
    }

    /// Discards every change since [`StableMemory::begin`].
    pub fn rollback(&mut self) {
        let undo = std::mem::take(&mut self.undo);
        for (page, before) in undo.saved {
            match before {
                Some(data) => {
                    self.pages.insert(page, data);
                }
                None => {
                    self.pages.remove(&page);
                }
            }
        }
        self.size_pages = undo.size_at_start;
        self.begin();
    }

    /// Replaces the whole content with `bytes` (size rounded up to whole pages),
    /// as canbench's `stable_memory.file` does. All-zero pages are not stored.
    pub fn load_bytes(&mut self, bytes: &[u8]) {
        self.pages.clear();
        self.size_pages = (bytes.len() as u64).div_ceil(PAGE_SIZE);
        for (index, chunk) in bytes.chunks(PAGE_SIZE as usize).enumerate() {
            if chunk.iter().any(|b| *b != 0) {
                let mut page = vec![0u8; PAGE_SIZE as usize];
                page[..chunk.len()].copy_from_slice(chunk);
                self.pages.insert(index as u64, Arc::from(page));
            }
        }
        self.begin();
    }

    /// Loads a raw stable memory image from a file (see [`StableMemory::load_bytes`]).
    pub fn load_file(&mut self, path: &Path) -> io::Result<()> {
        let mut bytes = Vec::new();
        fs::File::open(path)?.read_to_end(&mut bytes)?;
        self.load_bytes(&bytes);
        Ok(())
    }

    /// Writes the raw content (size × 64 KiB bytes) to a file; unwritten pages
    /// are left as holes, so a large sparse memory stays small on disk.
    pub fn save_file(&self, path: &Path) -> io::Result<()> {
        let mut file = fs::File::create(path)?;
        file.set_len(self.size_bytes())?;
        let mut indices: Vec<&u64> = self.pages.keys().collect();
        indices.sort();
        for index in indices {
            if let Some(page) = self.pages.get(index) {
                file.seek(SeekFrom::Start(index * PAGE_SIZE))?;
                file.write_all(page)?;
            }
        }
        Ok(())
    }
}

/// Indices of the 4 KiB pages overlapping `[offset, offset + len)`.
fn dirty_range(offset: u64, len: u64) -> std::ops::Range<u64> {
    page_range(offset, len, DIRTY_PAGE_SIZE)
}

/// Indices of the `page`-byte pages overlapping `[offset, offset + len)`.
fn page_range(offset: u64, len: u64, page: u64) -> std::ops::Range<u64> {
    if len == 0 {
        return 0..0;
    }
    let first = offset / page;
    let last = (offset.saturating_add(len) - 1) / page;
    first..last + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_pages_read_as_zero_and_take_no_memory() {
        let mut stable = StableMemory::new();
        assert_eq!(stable.grow(1000, MAX_PAGES), Some(0));
        let mut buf = [1u8; 8];
        assert_eq!(stable.read(999 * PAGE_SIZE, &mut buf), Ok(()));
        assert_eq!(buf, [0; 8]);
        assert_eq!(stable.allocated_pages(), 0);
    }

    #[test]
    fn a_clone_shares_its_pages_until_either_writes_them() {
        let mut stable = StableMemory::new();
        stable.grow(2, MAX_PAGES);
        stable.write(0, &[1; 8]).unwrap();
        stable.write(PAGE_SIZE, &[2; 8]).unwrap();
        stable.commit();
        let mut copy = stable.clone();
        assert!(Arc::ptr_eq(&stable.pages[&0], &copy.pages[&0]), "shared");
        copy.write(4, &[9]).unwrap();
        copy.commit();
        let (mut original, mut copied) = ([0; 8], [0; 8]);
        stable.read(0, &mut original).unwrap();
        copy.read(0, &mut copied).unwrap();
        assert_eq!(original, [1; 8], "the original is unchanged");
        assert_eq!(copied, [1, 1, 1, 1, 9, 1, 1, 1]);
        assert!(
            Arc::ptr_eq(&stable.pages[&1], &copy.pages[&1]),
            "the other page still shared"
        );
        // A rolled-back write in the original leaves the copy as it was too.
        stable.write(PAGE_SIZE, &[7]).unwrap();
        stable.rollback();
        copy.read(PAGE_SIZE, &mut copied).unwrap();
        assert_eq!(copied, [2; 8]);
    }

    #[test]
    fn out_of_bounds() {
        let mut stable = StableMemory::new();
        assert_eq!(stable.write(0, &[1]), Err(OutOfBounds));
        assert_eq!(stable.grow(1, MAX_PAGES), Some(0));
        assert_eq!(stable.write(PAGE_SIZE - 1, &[1, 2]), Err(OutOfBounds));
    }

    #[test]
    fn rollback_restores_content_and_size() {
        let mut stable = StableMemory::new();
        stable.grow(1, MAX_PAGES);
        stable.write(10, b"keep").ok();
        stable.commit();
        stable.grow(2, MAX_PAGES);
        stable.write(10, b"lose").ok();
        stable.write(PAGE_SIZE * 2, b"new page").ok();
        stable.rollback();
        assert_eq!(stable.size_pages(), 1);
        let mut buf = [0u8; 4];
        stable.read(10, &mut buf).ok();
        assert_eq!(&buf, b"keep");
        assert_eq!(stable.allocated_pages(), 1);
    }

    #[test]
    fn dirty_pages_counted_once_per_message() {
        let mut stable = StableMemory::new();
        stable.grow(1, MAX_PAGES);
        // [4090, 4100) overlaps 4 KiB pages 0 and 1.
        assert_eq!(stable.newly_dirtied(4090, 10), 2);
        stable.write(4090, &[1; 10]).ok();
        // Page 1 is dirty already, page 2 is new.
        assert_eq!(stable.newly_dirtied(4096, 4097), 1);
        assert_eq!(stable.newly_dirtied(0, 0), 0);
        stable.commit();
        assert_eq!(stable.newly_dirtied(4090, 10), 2);
    }

    #[test]
    fn regions_are_counted_once_per_message() {
        let mut stable = StableMemory::new();
        stable.grow(3, MAX_PAGES);
        // [65530, 65540) overlaps 64 KiB pages 0 and 1.
        assert_eq!(
            stable.untouched_regions(65_530, 10, false),
            (vec![0, 1], vec![])
        );
        assert_eq!(stable.touch_regions(65_530, 10, false), (2, 0));
        assert_eq!(stable.untouched_regions(0, 8, true), (vec![], vec![0]));
        assert_eq!(stable.touch_regions(0, 8, true), (0, 1));
        assert_eq!(stable.touch_regions(8, 8, true), (0, 0));
        stable.commit();
        assert_eq!(stable.touch_regions(0, 8, true), (1, 1));
    }

    #[test]
    fn grow_respects_limit() {
        let mut stable = StableMemory::new();
        assert_eq!(stable.grow(MAX_PAGES + 1, MAX_PAGES), None);
        assert_eq!(stable.grow(MAX_PAGES, MAX_PAGES), Some(0));
    }

    #[test]
    fn save_and_load_roundtrip() {
        let dir = std::env::temp_dir().join(format!("icrun-stable-{}", std::process::id()));
        let mut stable = StableMemory::new();
        stable.grow(3, MAX_PAGES);
        stable.write(PAGE_SIZE * 2 + 5, b"hello").ok();
        assert!(stable.save_file(&dir).is_ok());
        let mut loaded = StableMemory::new();
        assert!(loaded.load_file(&dir).is_ok());
        let _ = fs::remove_file(&dir);
        assert_eq!(loaded.size_pages(), 3);
        assert_eq!(loaded.allocated_pages(), 1);
        let mut buf = [0u8; 5];
        loaded.read(PAGE_SIZE * 2 + 5, &mut buf).ok();
        assert_eq!(&buf, b"hello");
    }
}
