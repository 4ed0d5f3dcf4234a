//! Copy-on-write tracking of the Wasm heap pages a message writes, as the
//! replica does: during a message the linear memory is read-only except the
//! pages the message already wrote; the first write to each 4 KiB page
//! faults, the fault handler saves the page's content and makes it writable.
//! The saved pages are both the dirty-page count (ic-metering.md §4) and the
//! undo log of the message.
//!
//! The memory stays read-only between messages: the next message only
//! re-protects the pages the previous one made writable (and protects pages
//! the memory grew by). So the per-message cost is proportional to the pages
//! written, never to the size of the heap: protecting a whole 1 GiB heap costs
//! milliseconds, because the kernel updates every resident page.
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
    /// Bytes from `base` that were protected (all read-only except `writable`).
    protected_len: usize,
    /// Pages inside `protected_len` made writable by earlier messages.
    writable: Vec<usize>,
}

impl State {
    /// Makes `[start, end)` pages of the tracked memory read-only.
    fn protect_pages(&self, start: usize, end: usize) -> bool {
        if start >= end {
            return true;
        }
        let address = self.base + start * TRACKED_PAGE;
        let len = (end - start) * TRACKED_PAGE;
        // SAFETY: the range lies inside the accessible part of the linear
        // memory; it is made writable again page by page on write faults.
        unsafe { libc::mprotect(address as *mut libc::c_void, len, libc::PROT_READ) == 0 }
    }

    /// Read-only again: the pages written since the last `begin`, merged into
    /// runs of consecutive pages, and the part the memory grew by.
    fn reprotect(&mut self) -> bool {
        let mut pages = std::mem::take(&mut self.writable);
        pages.sort_unstable();
        pages.dedup();
        let mut ok = true;
        let mut run: Option<(usize, usize)> = None;
        for page in pages {
            run = match run {
                Some((start, end)) if end == page => Some((start, page + 1)),
                Some((start, end)) => {
                    ok &= self.protect_pages(start, end);
                    Some((page, page + 1))
                }
                None => Some((page, page + 1)),
            };
        }
        if let Some((start, end)) = run {
            ok &= self.protect_pages(start, end);
        }
        let grown_from = self.protected_len / TRACKED_PAGE;
        ok &= self.protect_pages(grown_from, self.len / TRACKED_PAGE);
        self.protected_len = self.len;
        ok
    }

    /// Makes the whole memory writable and forgets its protection.
    fn unprotect_all(&mut self) {
        let len = self.protected_len.max(self.len);
        if len > 0 {
            // SAFETY: restores the protection the memory had before tracking.
            unsafe {
                libc::mprotect(
                    self.base as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                );
            }
        }
        self.protected_len = 0;
        self.writable.clear();
    }
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

    /// Starts tracking `[base, base + len)`: makes it read-only, at a cost
    /// proportional to the pages written since the last message (the whole
    /// range the first time). Returns false (and leaves the memory writable,
    /// tracking nothing) if the memory cannot be protected.
    pub fn begin(&self, base: *mut u8, len: usize) -> bool {
        let state = self.state();
        state.saved.clear();
        if state.base != base as usize || len < state.protected_len {
            // Another memory: nothing of it is protected yet.
            state.protected_len = 0;
            state.writable.clear();
        }
        state.base = base as usize;
        state.len = len;
        let ok = state.reprotect();
        if !ok {
            state.unprotect_all();
        }
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

    /// Stops tracking faults. The memory stays read-only except the pages the
    /// message wrote, which remain writable (so they can be undone) and are
    /// protected again by the next `begin`. Idempotent.
    pub fn end(&self) {
        self.state().active = false;
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
        let state = self.state();
        for (page, original) in state.saved.drain(..) {
            state.writable.push(page);
            let start = page * TRACKED_PAGE;
            if let Some(target) = heap.get_mut(start..start + original.len()) {
                target.copy_from_slice(&original);
            }
        }
    }

    /// Forgets the saved pages (the message's writes are kept).
    pub fn forget(&self) {
        let state = self.state();
        let written = state.saved.drain(..).map(|(page, _)| page);
        state.writable.extend(written);
    }
}
