//! Tracking the Wasm heap pages a message touches, with page protection, as the replica does
//! (docs/metering.md §6). One tracker serves one linear memory, in one of two modes:
//!
//! - [`Tracking::Writes`] ([`crate::Metering::PocketIc13`]): during a message the memory is
//!   read-only except the 4 KiB pages the message already wrote; the first write to a page
//!   faults, the fault handler saves the page and makes it writable. The saved pages are both
//!   the dirty-page count (charged after the message) and the undo log.
//! - [`Tracking::Regions`] ([`crate::Metering::Current`]): at the start of a message the
//!   memory is inaccessible; the first access to a 64 KiB Wasm page faults and is charged
//!   (the handler maps the page readable, or readable and writable in a query); in an update a
//!   first write to a readable page faults again, is charged again, and the page is saved and
//!   made writable. Charges taken in the handler wait in the tracker until the runtime applies
//!   them to the instruction counter at its next system call ([`MemoryTracker::take_charges`]).
//!
//! The protection stays between messages: the next message only re-protects the pages the
//! previous one opened (and pages the memory grew by). So the per-message cost is
//! proportional to the pages touched, never to the size of the heap.
//!
//! The fault handler is installed per store with wasmtime's `StoreExt::set_signal_handler`,
//! which wasmtime consults for every fault during a call into Wasm, including faults in host
//! functions (the ic0 functions that read and write the heap) and in wasmtime's own
//! bulk-memory code. Outside calls the runtime must not read a region the tracker left
//! inaccessible: [`MemoryTracker::unprotect_all`] first.
//!
//! The fault handler runs in a signal handler, so it never allocates: everything it records
//! (saved units, opened units, touched and written regions) goes into room the runtime reserved for the
//! worst case when the message started or the memory grew (see [`saved`]). Should that room
//! ever be used up, the handler declines the fault (the access then traps like an access out
//! of bounds) rather than allocate, and debug builds assert at the end of the message.

mod saved;

use saved::{push_within_capacity, reserve_total, SavedUnits};
use std::cell::UnsafeCell;

/// Size of a tracked OS page (docs/metering.md §6: 4 KiB).
pub const TRACKED_PAGE: usize = 4096;

/// docs/metering.md §6: the replica's memory tracker maps and charges 64 KiB Wasm pages.
const REGION: usize = 64 * 1024;

/// What a message's tracker records, and how pages are protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tracking {
    /// First writes per 4 KiB page ([`crate::Metering::PocketIc13`]).
    Writes,
    /// First accesses, and in updates first writes, per 64 KiB Wasm page
    /// ([`crate::Metering::Current`]), each charged as given.
    Regions {
        /// Instructions per Wasm page first accessed.
        access: u64,
        /// Instructions per Wasm page first written (only when `track_writes`).
        write: u64,
        /// Whether writes are tracked and charged (update, init and upgrade messages; the
        /// replica's `DirtyPageTracking::Track`). Queries are charged for accesses only.
        track_writes: bool,
    },
}

impl Tracking {
    fn unit(self) -> usize {
        match self {
            Tracking::Writes => TRACKED_PAGE,
            Tracking::Regions { .. } => REGION,
        }
    }

    /// The protection of an untouched unit at the start of a message.
    fn closed(self) -> libc::c_int {
        match self {
            Tracking::Writes => libc::PROT_READ,
            Tracking::Regions { .. } => libc::PROT_NONE,
        }
    }
}

/// Page charges taken by the fault handler and not yet applied to the instruction counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RegionCharges {
    /// 64 KiB Wasm pages first accessed.
    pub accessed: u64,
    /// 64 KiB Wasm pages first written.
    pub written: u64,
    /// Instructions for both.
    pub instructions: u64,
}

/// Regions (64 KiB Wasm pages) first accessed and first written, by index in the memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TouchedRegions {
    /// Regions first accessed.
    pub accessed: Vec<u64>,
    /// Regions first written.
    pub written: Vec<u64>,
}

/// What a region went through in the current message ([`Tracking::Regions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegionState {
    Untouched,
    Read,
    Written,
}

struct State {
    active: bool,
    base: usize,
    len: usize,
    tracking: Tracking,
    /// The original content of every unit saved since `begin`.
    saved: SavedUnits,
    /// Bytes from `base` that were protected (in the `tracking` mode's closed state, except
    /// the units in `opened`).
    protected_len: usize,
    /// Units made accessible since the last `begin`.
    opened: Vec<usize>,
    /// Per region, what the current message did to it ([`Tracking::Regions`]).
    regions: Vec<RegionState>,
    /// Regions whose state is not `Untouched`, in the order they were first accessed.
    touched: Vec<usize>,
    /// Regions first written in the message, in that order.
    written: Vec<usize>,
    /// How many of `touched` and of `written` [`MemoryTracker::take_regions`] reported.
    reported: (usize, usize),
    pending: RegionCharges,
    /// The fault handler declined a fault because the reserved room was used up (never
    /// expected: the room is reserved for the worst case).
    out_of_room: bool,
}

impl Default for State {
    fn default() -> Self {
        State {
            active: false,
            base: 0,
            len: 0,
            tracking: Tracking::Writes,
            saved: SavedUnits::default(),
            protected_len: 0,
            opened: Vec::new(),
            regions: Vec::new(),
            touched: Vec::new(),
            written: Vec::new(),
            reported: (0, 0),
            pending: RegionCharges::default(),
            out_of_room: false,
        }
    }
}

fn protect(address: usize, len: usize, protection: libc::c_int) -> bool {
    // SAFETY: callers pass ranges inside the accessible part of the tracked linear memory;
    // the tracker restores access on faults (or with `unprotect_all`).
    unsafe { libc::mprotect(address as *mut libc::c_void, len, protection) == 0 }
}

impl State {
    /// Gives the units `[start, end)` the closed protection of the current mode.
    fn close_units(&self, start: usize, end: usize) -> bool {
        if start >= end {
            return true;
        }
        let unit = self.tracking.unit();
        protect(
            self.base + start * unit,
            (end - start) * unit,
            self.tracking.closed(),
        )
    }

    /// Closes the units opened since the last `begin`, merged into runs of consecutive
    /// units, and the part the memory grew by.
    fn reprotect(&mut self) -> bool {
        // Taken and put back cleared, so that its reserved room is kept.
        let mut units = std::mem::take(&mut self.opened);
        units.sort_unstable();
        units.dedup();
        let mut ok = true;
        let mut run: Option<(usize, usize)> = None;
        for &unit in &units {
            run = match run {
                Some((start, end)) if end == unit => Some((start, unit + 1)),
                Some((start, end)) => {
                    ok &= self.close_units(start, end);
                    Some((unit, unit + 1))
                }
                None => Some((unit, unit + 1)),
            };
        }
        if let Some((start, end)) = run {
            ok &= self.close_units(start, end);
        }
        units.clear();
        self.opened = units;
        let unit = self.tracking.unit();
        ok &= self.close_units(self.protected_len / unit, self.len / unit);
        self.protected_len = self.len;
        ok
    }

    /// Makes the whole memory readable and writable and forgets its protection.
    fn unprotect_all(&mut self) {
        let len = self.protected_len.max(self.len);
        if len > 0 {
            protect(self.base, len, libc::PROT_READ | libc::PROT_WRITE);
        }
        self.protected_len = 0;
        self.opened.clear();
    }

    fn reset_regions(&mut self) {
        for region in self.touched.drain(..) {
            if let Some(state) = self.regions.get_mut(region) {
                *state = RegionState::Untouched;
            }
        }
        self.written.clear();
        self.reported = (0, 0);
        let regions = self.len.div_ceil(REGION);
        if self.regions.len() < regions {
            self.regions.resize(regions, RegionState::Untouched);
        }
    }

    /// Reserves room for everything the fault handler may record about the memory's `len`
    /// bytes in one message: each unit saved once, opened twice at most (a region is opened
    /// readable, then writable), each region touched once and written once. Not for the fault
    /// handler.
    fn reserve(&mut self) -> bool {
        let unit = self.tracking.unit();
        let units = self.len.div_ceil(unit);
        let regions = self.len.div_ceil(REGION);
        self.saved.reserve(units, unit)
            && reserve_total(&mut self.opened, units.saturating_mul(2))
            && reserve_total(&mut self.touched, regions)
            && reserve_total(&mut self.written, regions)
    }

    /// Whether the fault handler can open a unit (and save it, if `save`; record a newly
    /// touched region, if `touch`; record a newly written region, if `write`) without
    /// allocating; records it when it cannot.
    fn has_room(&mut self, save: bool, touch: bool, write: bool) -> bool {
        let room = self.opened.len() < self.opened.capacity()
            && (!touch || self.touched.len() < self.touched.capacity())
            && (!write || self.written.len() < self.written.capacity())
            && (!save || self.saved.has_room(self.tracking.unit()));
        self.out_of_room |= !room;
        room
    }

    /// Saves unit `unit` (before its first write) and makes it accessible with `protection`.
    /// Never allocates (the caller checked [`State::has_room`]).
    fn open(&mut self, unit: usize, save: bool, protection: libc::c_int) -> bool {
        let size = self.tracking.unit();
        let start = self.base + unit * size;
        if save {
            // SAFETY: the unit lies inside the tracked memory, which is at least readable here
            // (a closed region is made readable first by the caller when it saves).
            let original = unsafe { std::slice::from_raw_parts(start as *const u8, size) };
            if !self.saved.push(unit, original) {
                self.out_of_room = true;
                return false;
            }
        }
        if !push_within_capacity(&mut self.opened, unit) {
            self.out_of_room = true;
            return false;
        }
        protect(start, size, protection)
    }

    /// A fault at byte `offset` of the memory, in [`Tracking::Writes`] mode.
    fn write_fault(&mut self, offset: usize) -> bool {
        let page = offset / TRACKED_PAGE;
        self.has_room(true, false, false)
            && self.open(page, true, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// A fault at byte `offset` of the memory, in [`Tracking::Regions`] mode.
    fn region_fault(&mut self, offset: usize, access: u64, write: u64, track_writes: bool) -> bool {
        let region = offset / REGION;
        let Some(state) = self.regions.get(region).copied() else {
            return false;
        };
        let read_write = libc::PROT_READ | libc::PROT_WRITE;
        // Check for room before changing anything, so that a declined fault leaves the state
        // as it was: a first access touches the region (and in a query saves it), a first
        // write saves it and records it as written.
        let room = match state {
            RegionState::Untouched => self.has_room(!track_writes, true, false),
            RegionState::Read if track_writes => self.has_room(true, false, true),
            RegionState::Read | RegionState::Written => true,
        };
        if !room {
            return false;
        }
        match state {
            RegionState::Untouched => {
                self.regions[region] = RegionState::Read;
                push_within_capacity(&mut self.touched, region);
                self.pending.accessed += 1;
                self.pending.instructions += access;
                if track_writes {
                    // A write retries and faults again on the read-only page (below).
                    self.open(region, false, libc::PROT_READ)
                } else {
                    // A query's writes are not charged but must be undone: save first.
                    protect(self.base + region * REGION, REGION, libc::PROT_READ)
                        && self.open(region, true, read_write)
                }
            }
            RegionState::Read if track_writes => {
                self.regions[region] = RegionState::Written;
                push_within_capacity(&mut self.written, region);
                self.pending.written += 1;
                self.pending.instructions += write;
                self.open(region, true, read_write)
            }
            // A fault on a page the tracker opened fully is not the tracker's.
            RegionState::Read | RegionState::Written => false,
        }
    }
}

/// Page tracking of one linear memory; shared between the store's fault handler and the
/// runtime.
///
/// Safety model: a store runs on one thread at a time and the fault handler runs
/// synchronously on that thread while Wasm (or a host function called from it) is executing;
/// the runtime only touches the state between calls or from host functions, never while the
/// handler runs. So the state is never accessed concurrently.
#[derive(Default)]
pub(crate) struct MemoryTracker {
    state: UnsafeCell<State>,
}

// SAFETY: see the type's safety model: accesses never overlap in time.
unsafe impl Sync for MemoryTracker {}
// SAFETY: the state holds only owned data and addresses.
unsafe impl Send for MemoryTracker {}

impl MemoryTracker {
    /// A tracker that is not tracking anything.
    pub fn new() -> Self {
        Self::default()
    }

    #[allow(clippy::mut_from_ref)]
    fn state(&self) -> &mut State {
        // SAFETY: see the type's safety model.
        unsafe { &mut *self.state.get() }
    }

    /// The host's OS page size in bytes, the granularity of `mprotect` (0 if unknown).
    pub fn os_page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).unwrap_or(0)
    }

    /// Starts tracking `[base, base + len)` for a message, in `tracking` mode: closes the
    /// units opened by the previous message (the whole range the first time, or when the
    /// mode changed). Returns false (and leaves the memory accessible, tracking nothing) if
    /// the memory cannot be protected.
    pub fn begin(&self, base: *mut u8, len: usize, tracking: Tracking) -> bool {
        let state = self.state();
        state.saved.clear();
        state.pending = RegionCharges::default();
        if state.base != base as usize || len < state.protected_len {
            // Another memory: nothing of it is protected yet (the old one is gone).
            state.protected_len = 0;
            state.opened.clear();
        } else if state.tracking.unit() != tracking.unit()
            || state.tracking.closed() != tracking.closed()
        {
            // Another mode on the same memory: start from an unprotected memory.
            state.unprotect_all();
        }
        state.base = base as usize;
        state.len = len;
        state.tracking = tracking;
        state.out_of_room = false;
        state.reset_regions();
        let ok = state.reserve() && state.reprotect();
        if !ok {
            state.unprotect_all();
        }
        state.active = ok;
        ok
    }

    /// Called by the fault handler with the faulting address; returns whether the fault was
    /// the tracker's (and is now resolved).
    pub fn on_fault(&self, address: usize) -> bool {
        let state = self.state();
        if !state.active || address < state.base || address >= state.base + state.len {
            return false;
        }
        let offset = address - state.base;
        match state.tracking {
            Tracking::Writes => state.write_fault(offset),
            Tracking::Regions {
                access,
                write,
                track_writes,
            } => state.region_fault(offset, access, write, track_writes),
        }
    }

    /// [`Tracking::Regions`]: accounts for the part the memory grew by since the message
    /// started (`len` is its size now): wasmtime maps grown memory accessible, so accesses to
    /// it do not fault. A grown region that is no longer all zeros counts as accessed and
    /// (in updates) written; the others are closed, so that their first access faults.
    /// Reads of grown zero pages before this call are not seen (docs/metering.md §10).
    pub fn catch_up_growth(&self, len: usize) {
        let state = self.state();
        let Tracking::Regions {
            access,
            write,
            track_writes,
        } = state.tracking
        else {
            return;
        };
        if !state.active || len <= state.len {
            return;
        }
        let first = state.len.div_ceil(REGION);
        state.len = len;
        let regions = len.div_ceil(REGION);
        if state.regions.len() < regions {
            state.regions.resize(regions, RegionState::Untouched);
        }
        // Room for the handler's faults on the grown part (if the allocation fails, the
        // handler declines them: the message traps instead of allocating in a signal handler).
        let _ = state.reserve();
        for region in first..len / REGION {
            let start = state.base + region * REGION;
            // SAFETY: grown memory is mapped readable and writable by wasmtime.
            let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, REGION) };
            if bytes.iter().any(|byte| *byte != 0) {
                state.pending.accessed += 1;
                state.pending.instructions += access;
                state.touched.push(region);
                state.opened.push(region);
                if track_writes {
                    state.pending.written += 1;
                    state.pending.instructions += write;
                    state.regions[region] = RegionState::Written;
                    state.written.push(region);
                } else {
                    state.regions[region] = RegionState::Read;
                }
            } else {
                protect(start, REGION, libc::PROT_NONE);
            }
        }
        state.protected_len = len;
    }

    /// Takes the page charges the fault handler made since the last call.
    pub fn take_charges(&self) -> RegionCharges {
        std::mem::take(&mut self.state().pending)
    }

    /// The regions ([`Tracking::Regions`]) first accessed and first written in the message
    /// since the last call, in the order the tracker saw them: with [`MemoryTracker::take_charges`]
    /// called at the same points, the pages those charges are for. Not for the fault handler.
    pub fn take_regions(&self) -> TouchedRegions {
        let state = self.state();
        let (accessed, written) = state.reported;
        let new = |list: &[usize], from: usize| -> Vec<u64> {
            list.get(from..)
                .unwrap_or_default()
                .iter()
                .map(|region| *region as u64)
                .collect()
        };
        let regions = TouchedRegions {
            accessed: new(&state.touched, accessed),
            written: new(&state.written, written),
        };
        state.reported = (state.touched.len(), state.written.len());
        regions
    }

    /// Stops tracking faults. Units the message opened stay accessible (so they can be
    /// undone) and are closed again by the next `begin`. Idempotent.
    pub fn end(&self) {
        let state = self.state();
        state.active = false;
        debug_assert!(
            !state.out_of_room,
            "the memory tracker's fault handler ran out of its reserved room"
        );
    }

    /// Units saved since `begin`: 4 KiB pages written ([`Tracking::Writes`]) or 64 KiB pages
    /// saved before their first write ([`Tracking::Regions`]).
    pub fn saved_units(&self) -> usize {
        self.state().saved.len()
    }

    /// Writes the saved units back into `heap` (after `end`), undoing the writes of the
    /// message, and forgets them.
    pub fn undo(&self, heap: &mut [u8]) {
        let state = self.state();
        let unit = state.tracking.unit();
        for (index, original) in state.saved.iter(unit) {
            let start = index * unit;
            if let Some(target) = heap.get_mut(start..start + original.len()) {
                target.copy_from_slice(original);
            }
        }
        state.saved.clear();
    }

    /// Forgets the saved units (the message's writes are kept).
    pub fn forget(&self) {
        self.state().saved.clear();
    }

    /// Makes the whole memory accessible again (for the runtime's own reads between
    /// messages); the next `begin` protects it anew.
    pub fn unprotect_all(&self) {
        self.state().unprotect_all();
    }
}

#[cfg(test)]
mod tests {
    //! The fault handler's part (`on_fault`) is called directly here, as the signal handler
    //! would call it, on memory mapped for the test; a counting allocator checks it never
    //! allocates.

    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    }

    /// The system allocator, counting the allocations of each thread.
    struct Counting;

    fn count() {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }

    // SAFETY: forwards to the system allocator.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: the caller's contract is the system allocator's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: as above.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    fn allocations() -> usize {
        ALLOCATIONS.with(Cell::get)
    }

    /// Four 64 KiB Wasm pages of anonymous memory, each byte set to its page's number.
    struct Mapped {
        base: *mut u8,
        len: usize,
    }

    impl Mapped {
        fn new() -> Mapped {
            let len = 4 * REGION;
            // SAFETY: a fresh private anonymous mapping; checked below.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(base, libc::MAP_FAILED, "mmap");
            let mapped = Mapped {
                base: base.cast(),
                len,
            };
            for (index, byte) in mapped.bytes().iter_mut().enumerate() {
                *byte = (index / TRACKED_PAGE) as u8;
            }
            mapped
        }

        #[allow(clippy::mut_from_ref)]
        fn bytes(&self) -> &mut [u8] {
            // SAFETY: the mapping is `len` bytes and lives as long as `self`; the tests only
            // touch it where the tracker made it accessible.
            unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
        }

        fn address(&self, offset: usize) -> usize {
            self.base as usize + offset
        }
    }

    impl Drop for Mapped {
        fn drop(&mut self) {
            // SAFETY: unmaps the mapping made in `new`.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }

    /// Calls `on_fault` for each address, as the handler would, and returns how many
    /// allocations that made.
    fn faults(tracker: &MemoryTracker, addresses: impl Iterator<Item = usize>) -> usize {
        let addresses: Vec<usize> = addresses.collect();
        let before = allocations();
        for address in addresses {
            assert!(tracker.on_fault(address), "fault at {address:#x} resolved");
        }
        allocations() - before
    }

    #[test]
    fn write_faults_save_pages_without_allocating() {
        let memory = Mapped::new();
        let original = memory.bytes().to_vec();
        let tracker = MemoryTracker::new();
        for message in 0..2 {
            assert!(tracker.begin(memory.base, memory.len, Tracking::Writes));
            let pages = (0..memory.len).step_by(TRACKED_PAGE);
            let allocated = faults(&tracker, pages.map(|offset| memory.address(offset)));
            assert_eq!(allocated, 0, "message {message}");
            memory.bytes().fill(0xff);
            tracker.end();
            assert_eq!(tracker.saved_units(), memory.len / TRACKED_PAGE);
            tracker.undo(memory.bytes());
            assert_eq!(memory.bytes(), &original[..], "message {message} undone");
        }
        tracker.unprotect_all();
    }

    #[test]
    fn region_faults_charge_and_save_without_allocating() {
        let memory = Mapped::new();
        let original = memory.bytes().to_vec();
        let tracker = MemoryTracker::new();
        for track_writes in [true, false, true] {
            let tracking = Tracking::Regions {
                access: 80_000,
                write: 80_000,
                track_writes,
            };
            assert!(tracker.begin(memory.base, memory.len, tracking));
            let regions = (0..memory.len).step_by(REGION);
            let accesses = regions.clone().map(|offset| memory.address(offset + 8));
            assert_eq!(faults(&tracker, accesses), 0);
            if track_writes {
                // The write faults again on the readable region.
                let writes = regions.map(|offset| memory.address(offset + 16));
                assert_eq!(faults(&tracker, writes), 0);
            }
            memory.bytes().fill(0xff);
            let charges = tracker.take_charges();
            let written = if track_writes { 4 } else { 0 };
            assert_eq!((charges.accessed, charges.written), (4, written));
            assert_eq!(charges.instructions, (4 + written) * 80_000);
            // The regions behind the charges, reported once.
            let regions = tracker.take_regions();
            assert_eq!(regions.accessed, vec![0, 1, 2, 3]);
            let expected: Vec<u64> = if track_writes {
                vec![0, 1, 2, 3]
            } else {
                vec![]
            };
            assert_eq!(regions.written, expected);
            assert_eq!(tracker.take_regions(), TouchedRegions::default());
            tracker.end();
            assert_eq!(tracker.saved_units(), 4);
            tracker.undo(memory.bytes());
            assert_eq!(memory.bytes(), &original[..], "undone");
        }
        tracker.unprotect_all();
    }

    #[test]
    fn without_room_a_fault_is_declined_and_nothing_changes() {
        let memory = Mapped::new();
        // A state that never reserved room (the runtime always does, in `begin`).
        let mut state = State {
            active: true,
            base: memory.base as usize,
            len: memory.len,
            ..State::default()
        };
        let before = allocations();
        assert!(!state.write_fault(0));
        assert_eq!(allocations(), before);
        assert!(state.out_of_room);
        assert_eq!((state.saved.len(), state.opened.len()), (0, 0));
    }
}
