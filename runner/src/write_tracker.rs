//! Copy-on-write tracking of the Wasm heap pages a message writes, as the
//! replica does: at the start of a message the linear memory is made
//! read-only; the first write to each 4 KiB page faults, the fault handler
//! saves the page's content and makes it writable again. The saved pages are
//! both the dirty-page count (ic-metering.md §4) and the undo log of the
//! message, so the per-message cost is proportional to the pages written, not
//! to the size of the heap.
//!
//! The fault handler is installed per store with wasmtime's
//! `StoreExt::set_signal_handler`, which wasmtime consults for every fault
//! during a call into Wasm, including faults in host functions (the ic0
//! functions that write into the heap) and in wasmtime's own bulk-memory code.

use std::cell::UnsafeCell;

/// Size of a tracked page (ic-metering.md §4: heap pages are 4 KiB; also the OS page size).
pub const TRACKED_PAGE: usize = 4096;

#[derive(Default)]
struct State {
    active: bool,
    base: usize,
    len: usize,
    /// (page index, original content) of every page written since `begin`.
    saved: Vec<(usize, Box<[u8]>)>,
}

/// Write tracking of one linear memory; shared between the store's fault
/// handler and the runtime.
///
/// Safety model: a store runs on one thread at a time and the fault handler
/// runs synchronously on that thread while Wasm (or a host function called
/// from it) is executing; the runtime only touches the state between calls.
/// So the state is never accessed concurrently.
#[derive(Default)]
pub struct WriteTracker {
    state: UnsafeCell<State>,
}

// SAFETY: see the safety model above: accesses never overlap in time.
unsafe impl Sync for WriteTracker {}
// SAFETY: the state holds only owned data.
unsafe impl Send for WriteTracker {}

impl WriteTracker {
    /// A tracker that is not tracking anything.
    pub fn new() -> Self {
        Self::default()
    }

    #[allow(clippy::mut_from_ref)]
    fn state(&self) -> &mut State {
        // SAFETY: see the type's safety model.
        unsafe { &mut *self.state.get() }
    }

    /// Whether the system supports tracking (page size is 4 KiB).
    pub fn supported() -> bool {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        page == TRACKED_PAGE as libc::c_long
    }

    /// Starts tracking `[base, base + len)`: makes it read-only.
    /// Returns false (and tracks nothing) if the memory cannot be protected.
    pub fn begin(&self, base: *mut u8, len: usize) -> bool {
        let state = self.state();
        state.saved.clear();
        state.base = base as usize;
        state.len = len;
        if len == 0 {
            state.active = true;
            return true;
        }
        // SAFETY: `[base, base + len)` is the accessible part of a linear
        // memory, page aligned; making it read-only is undone by `end`.
        let ok = unsafe { libc::mprotect(base.cast(), len, libc::PROT_READ) } == 0;
        state.active = ok;
        ok
    }

    /// Called by the fault handler with the faulting address; returns whether
    /// the fault was a first write to a tracked page (and is now resolved).
    pub fn on_fault(&self, address: usize) -> bool {
        let state = self.state();
        if !state.active || address < state.base || address >= state.base + state.len {
            return false;
        }
        let page = (address - state.base) / TRACKED_PAGE;
        let start = state.base + page * TRACKED_PAGE;
        // SAFETY: the page lies inside the tracked, readable memory.
        let original = unsafe { std::slice::from_raw_parts(start as *const u8, TRACKED_PAGE) };
        state.saved.push((page, original.into()));
        // SAFETY: re-enables writes on one page of the tracked memory.
        unsafe {
            libc::mprotect(
                start as *mut libc::c_void,
                TRACKED_PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
            ) == 0
        }
    }

    /// Stops tracking: the whole range is writable again. Idempotent.
    pub fn end(&self) {
        let state = self.state();
        if state.active && state.len > 0 {
            // SAFETY: restores the protection the memory had before `begin`.
            unsafe {
                libc::mprotect(
                    state.base as *mut libc::c_void,
                    state.len,
                    libc::PROT_READ | libc::PROT_WRITE,
                );
            }
        }
        state.active = false;
    }

    /// Number of pages written since `begin`.
    pub fn written_pages(&self) -> usize {
        self.state().saved.len()
    }

    /// Length of the tracked range (the heap size at `begin`).
    pub fn tracked_len(&self) -> usize {
        self.state().len
    }

    /// Writes the saved pages back into `heap` (after `end`), undoing the
    /// writes of the message, and forgets them.
    pub fn undo(&self, heap: &mut [u8]) {
        for (page, original) in self.state().saved.drain(..) {
            let start = page * TRACKED_PAGE;
            if let Some(target) = heap.get_mut(start..start + original.len()) {
                target.copy_from_slice(&original);
            }
        }
    }

    /// Forgets the saved pages (the message's writes are kept).
    pub fn forget(&self) {
        self.state().saved.clear();
    }
}
