//! Snapshots of an instance's Wasm state (linear memory and mutable globals),
//! used to roll a message back and to count the heap pages it dirtied.
//!
//! Two ways to keep the heap, chosen per message:
//! - page tracking ([`crate::memory_tracker`]; icrun refuses hosts whose pages are not
//!   4 KiB, see `crate::live::check_page_size`): nothing is copied up front; the first
//!   write to each page saves it. Cost per message is proportional to the pages written,
//!   and a page counts as dirty when it is written, even with unchanged content, as on the
//!   replica;
//! - a full copy (fallback, when the memory cannot be protected or there are no Unix
//!   signals): the heap is copied at the start of the message and compared page by page
//!   afterwards; cost O(heap size), and a page counts as dirty only when its content
//!   changed.
//!
//! Limitation: tables are not part of a snapshot. A message that changes a
//! table (`table.set`, `table.grow`, `table.fill`, `table.copy`,
//! `table.init`) and then traps keeps those changes, where the replica rolls
//! them back with the rest of the message; wasmtime tables cannot shrink, so
//! undoing a `table.grow` would need a fresh instance as for a grown memory.
//! Canisters that do not use Wasm reference types (e.g. Rust canisters built
//! for ic-cdk) fill their table from element segments at instantiation only,
//! so this does not affect them.

use crate::memory_tracker::{MemoryTracker, Tracking};
use crate::state::HostState;
use std::sync::Arc;
use wasmtime::{Instance, Store, Val};

/// Size of the heap pages whose dirtying is charged (docs/metering.md §6: 4 KiB).
pub const HEAP_PAGE_SIZE: usize = 4 * 1024;

/// Linear memory size, globals and (in copy mode) content at the start of a
/// message; not the tables (see the module documentation).
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    heap_len: usize,
    /// Full heap copy when the instance has no write tracking.
    copy: Option<Vec<u8>>,
    globals: Vec<(String, Val)>,
}

/// The memory grew during the message; wasmtime memories cannot shrink, so
/// rolling back needs a fresh instance. The old memory's first
/// [`Snapshot::heap_len`] bytes and its globals have been restored already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryGrew;

impl Snapshot {
    /// Starts a message on `instance`: records its globals and either starts
    /// page tracking in `tracking` mode or copies the heap.
    pub fn take(
        store: &mut Store<HostState>,
        instance: &Instance,
        global_exports: &[String],
        tracker: Option<&Arc<MemoryTracker>>,
        tracking: Tracking,
    ) -> Snapshot {
        let globals = exported_globals(store, instance, global_exports);
        let Some(memory) = store.data().memory else {
            return Snapshot {
                globals,
                ..Snapshot::default()
            };
        };
        let heap_len = memory.data_size(&*store);
        let tracked =
            tracker.is_some_and(|t| t.begin(memory.data_ptr(&*store), heap_len, tracking));
        let copy = (!tracked).then(|| memory.data(&*store).to_vec());
        Snapshot {
            heap_len,
            copy,
            globals,
        }
    }

    /// The globals and heap size of an instance between messages, without tracking (for
    /// [`crate::Canister::snapshot`]).
    pub fn of_globals(
        store: &mut Store<HostState>,
        instance: &Instance,
        global_exports: &[String],
    ) -> Snapshot {
        let globals = exported_globals(store, instance, global_exports);
        let heap_len = store
            .data()
            .memory
            .map_or(0, |memory| memory.data_size(&*store));
        Snapshot {
            heap_len,
            copy: None,
            globals,
        }
    }

    /// Heap size in bytes at the start of the message.
    pub fn heap_len(&self) -> usize {
        self.heap_len
    }

    /// Number of 4 KiB heap pages the message dirtied. Call before
    /// [`Snapshot::finish`]. Pages added by `memory.grow` count when they are
    /// no longer all zero.
    pub fn dirty_pages(
        &self,
        store: &Store<HostState>,
        tracker: Option<&Arc<MemoryTracker>>,
    ) -> u64 {
        let Some(memory) = store.data().memory else {
            return 0;
        };
        let now = memory.data(store);
        let grown = now.get(self.heap_len..).unwrap_or(&[]);
        let grown_dirty = grown
            .chunks(HEAP_PAGE_SIZE)
            .filter(|page| page.iter().any(|b| *b != 0))
            .count() as u64;
        let old_part = &now[..self.heap_len.min(now.len())];
        let old_dirty = match (&self.copy, tracker) {
            (Some(copy), _) => old_part
                .chunks(HEAP_PAGE_SIZE)
                .zip(copy.chunks(HEAP_PAGE_SIZE))
                .filter(|(now, before)| now != before)
                .count() as u64,
            (None, Some(tracker)) => tracker.saved_units() as u64,
            (None, None) => 0,
        };
        old_dirty + grown_dirty
    }

    /// Ends the message's write tracking (the memory is writable again); the
    /// saved pages are kept until [`Snapshot::commit`] or [`Snapshot::restore`].
    pub fn finish(&self, tracker: Option<&Arc<MemoryTracker>>) {
        if let Some(tracker) = tracker {
            tracker.end();
        }
    }

    /// Keeps the message's writes: forgets the saved pages.
    pub fn commit(&self, tracker: Option<&Arc<MemoryTracker>>) {
        if let Some(tracker) = tracker {
            tracker.end();
            tracker.forget();
        }
    }

    /// Undoes the message on the instance it was taken from: heap content and
    /// globals. Fails with [`MemoryGrew`] if the memory is now larger.
    pub fn restore(
        &self,
        store: &mut Store<HostState>,
        instance: &Instance,
        tracker: Option<&Arc<MemoryTracker>>,
    ) -> Result<(), MemoryGrew> {
        let mut grew = false;
        if let Some(memory) = store.data().memory {
            if let Some(tracker) = tracker {
                tracker.end();
            }
            let heap = memory.data_mut(&mut *store);
            grew = heap.len() > self.heap_len;
            match (&self.copy, tracker) {
                (Some(copy), _) => {
                    if let Some(target) = heap.get_mut(..copy.len()) {
                        target.copy_from_slice(copy);
                    }
                }
                (None, Some(tracker)) => tracker.undo(heap),
                (None, None) => {}
            }
        }
        self.restore_globals(store, instance);
        if grew {
            Err(MemoryGrew)
        } else {
            Ok(())
        }
    }

    fn restore_globals(&self, store: &mut Store<HostState>, instance: &Instance) {
        for (name, value) in &self.globals {
            if let Some(global) = instance.get_global(&mut *store, name) {
                // Only numeric globals can move between instances; a failed
                // reference global restore leaves the current value.
                let _ = global.set(&mut *store, *value);
            }
        }
    }

    /// Puts the state of before the message into a fresh instance of the same
    /// module: `heap` (the old instance's restored first [`Snapshot::heap_len`]
    /// bytes) and the globals.
    pub fn restore_into_fresh(
        &self,
        heap: &[u8],
        store: &mut Store<HostState>,
        instance: &Instance,
    ) -> Result<(), MemoryGrew> {
        if let Some(memory) = store.data().memory {
            let current = memory.data_size(&*store);
            if current > heap.len() {
                return Err(MemoryGrew);
            }
            if current < heap.len() {
                let page = memory.page_size(&*store) as usize;
                let missing = (heap.len() - current).div_ceil(page);
                memory
                    .grow(&mut *store, missing as u64)
                    .map_err(|_| MemoryGrew)?;
            }
            memory.data_mut(&mut *store)[..heap.len()].copy_from_slice(heap);
        }
        self.restore_globals(store, instance);
        Ok(())
    }
}

/// The current values of the instance's exported globals named in `global_exports` (names
/// the instance does not export are skipped).
fn exported_globals(
    store: &mut Store<HostState>,
    instance: &Instance,
    global_exports: &[String],
) -> Vec<(String, Val)> {
    global_exports
        .iter()
        .filter_map(|name| {
            let global = instance.get_global(&mut *store, name)?;
            Some((name.clone(), global.get(&mut *store)))
        })
        .collect()
}
