//! A memory that records which 64 KiB pages are read and written, for tests that hold the
//! engine to the pages the IC charges (docs/metering.md §6), and counts its reads, each of
//! which pays the system API's fee (§5).

use super::page::PAGE_BYTES;
use ic_stable_structures::{Memory, VectorMemory};
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

/// A [`VectorMemory`] that records the pages each read and write touch, and counts reads.
#[derive(Clone)]
pub struct PageCounter {
    memory: VectorMemory,
    read: Rc<RefCell<BTreeSet<u64>>>,
    written: Rc<RefCell<BTreeSet<u64>>>,
    reads: Rc<Cell<u64>>,
}

impl PageCounter {
    /// Counts the pages touched in `memory` from now on.
    pub fn new(memory: VectorMemory) -> PageCounter {
        PageCounter {
            memory,
            read: Rc::default(),
            written: Rc::default(),
            reads: Rc::default(),
        }
    }

    /// The pages read since the start or the last [`PageCounter::reset`], in order.
    pub fn pages_read(&self) -> Vec<u64> {
        self.read.borrow().iter().copied().collect()
    }

    /// The pages written since the start or the last [`PageCounter::reset`], in order.
    pub fn pages_written(&self) -> Vec<u64> {
        self.written.borrow().iter().copied().collect()
    }

    /// The read calls since the start or the last [`PageCounter::reset`].
    pub fn reads(&self) -> u64 {
        self.reads.get()
    }

    /// Forgets the pages and reads counted so far.
    pub fn reset(&self) {
        self.read.borrow_mut().clear();
        self.written.borrow_mut().clear();
        self.reads.set(0);
    }

    fn note(pages: &RefCell<BTreeSet<u64>>, offset: u64, len: usize) {
        if len == 0 {
            return;
        }
        let page = PAGE_BYTES as u64;
        let last = (offset + len as u64 - 1) / page;
        pages.borrow_mut().extend(offset / page..=last);
    }
}

impl Memory for PageCounter {
    fn size(&self) -> u64 {
        self.memory.size()
    }

    fn grow(&self, pages: u64) -> i64 {
        self.memory.grow(pages)
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        self.reads.set(self.reads.get() + 1);
        Self::note(&self.read, offset, dst.len());
        self.memory.read(offset, dst)
    }

    fn write(&self, offset: u64, src: &[u8]) {
        Self::note(&self.written, offset, src.len());
        self.memory.write(offset, src)
    }
}
