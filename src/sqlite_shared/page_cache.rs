//! The stable-memory engine's SQLite page cache: pages kept in page-aligned heap slabs, with
//! no LRU list, so that looking a page up writes nothing but SQLite's own page header.
//!
//! # Why
//! An update pays for every 4 KiB heap page it dirties (docs/metering.md §6, `pocketic-13`:
//! 1,000 instructions each, after the message). SQLite's default cache (`pcache1`) keeps
//! every unpinned page on a global LRU list: pinning a page unlinks it, which writes the
//! headers of its two neighbours, and unpinning links it in again at the head, which writes
//! the old head's. Those headers sit at the end of each page's own allocation, so a one-row
//! insert that walks root, interior and leaf page dirtied seven heap pages in `pcache1Fetch`
//! alone (`docs/flamegraphs/stable_sqlite_memory_insert_user_1.svg` before this cache).
//!
//! This cache looks pages up in a vector indexed by page number and keeps no list: a fetch
//! reads the vector and, at most, sets one flag beside SQLite's page header (which SQLite
//! writes on every fetch anyway). Page buffers are page-aligned, so a changed 4 KiB page
//! dirties exactly one heap page, and the headers are packed together, away from the data.
//!
//! # Which caches
//! SQLite has one page-cache implementation per process (`SQLITE_CONFIG_PCACHE2`, set
//! before SQLite initializes). [`install`] sets this module's, which creates its own caches
//! only for connections the stable-memory engine opens ([`for_stable_engine`]); every other
//! connection of the process (the seed's SQLite engine, an application's own databases)
//! gets SQLite's default cache, reached through one more call.
//!
//! # Eviction
//! The cache honours `PRAGMA cache_size`: when it is full and SQLite asks for a new page, an
//! unpinned page is dropped (SQLite only unpins clean pages), found by a clock hand over the
//! page numbers; a page unpinned while the cache is over its size (after a transaction that
//! dirtied more pages than it holds) is dropped at once. The store's default cache (160 MiB) holds a 1,000,000-row table whole, so
//! the headline workloads never evict.

use rusqlite::ffi;
use std::alloc::{self, Layout};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_uint, c_void};
use std::mem::{self, MaybeUninit};
use std::ptr::{self, NonNull};
use std::sync::OnceLock;

/// Bytes of page buffers allocated at a time: 256 pages of 4 KiB, 16 of 64 KiB (at most
/// [`HEADERS_PER_SLAB`] pages, so smaller pages take less).
const BUFFER_SLAB_BYTES: usize = 1 << 20;

/// Alignment of the page buffers within their slab: a Wasm page, the unit the `master-2026`
/// profile charges for every heap page a message touches (docs/metering.md §6), so that 16
/// pages of 4 KiB span one Wasm page, not two. The slab is allocated 64 KiB larger and aligned
/// by hand: an aligned allocation would hand the allocator's free lists the gap before it,
/// and the small allocations of every message would scatter over such gaps.
const SLAB_ALIGN: usize = 64 * 1024;

/// Page headers allocated at a time, and the most pages a buffer slab holds, so that a header
/// slab always has room for a buffer slab's headers (a multiple of every slab's page count).
/// Many to a slab, so the headers SQLite writes on every fetch share few heap pages.
const HEADERS_PER_SLAB: usize = 256;

/// Page numbers from this one on are kept in the map of far pages, not the index: 2^31 pages
/// is 1 TiB at the smallest page size (512 B), more than a canister's stable memory holds
/// (docs/metering.md §2), so every page of a real database is indexed, and a corrupt page
/// number cannot make the index's chunk list larger than 131,072 entries (4 MiB).
const MAX_INDEXED_PAGE: u32 = 1 << 31;

/// The byte SQLite's file locking reserves (`PENDING_BYTE`, 1 GiB): its page holds no data.
/// SQLite parks pages at that page number while it renumbers the pages of a split, so that
/// one number goes to the short list too; indexing it would grow the index to 262,145
/// entries (1 MiB of heap written) with 4 KiB pages.
const PENDING_BYTE: u32 = 0x4000_0000;

thread_local! {
    /// Depth of [`for_stable_engine`] calls on this thread: caches created while it is
    /// positive are this module's.
    static STABLE_SCOPE: Cell<u32> = const { Cell::new(0) };
    /// Caches of this module alive on this thread, and the pages they hold.
    static STATS: Cell<CacheStats> = const { Cell::new(CacheStats { caches: 0, pages: 0 }) };
}

/// What this module's caches on the current thread hold ([`stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Caches alive.
    pub caches: usize,
    /// Pages they hold.
    pub pages: usize,
}

/// The caches this module created on the current thread and still alive, with their pages.
pub fn stats() -> CacheStats {
    STATS.with(Cell::get)
}

fn update_stats(change: impl FnOnce(&mut CacheStats)) {
    STATS.with(|stats| {
        let mut now = stats.get();
        change(&mut now);
        stats.set(now);
    });
}

/// Runs `open` so that the SQLite page caches it creates are this module's. The engine opens
/// its connection inside it: SQLite creates a connection's cache when it learns the page
/// size, which happens while the store opens (the first read of page 1).
pub fn for_stable_engine<T>(open: impl FnOnce() -> T) -> T {
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            STABLE_SCOPE.with(|depth| depth.set(depth.get().saturating_sub(1)));
        }
    }
    STABLE_SCOPE.with(|depth| depth.set(depth.get() + 1));
    let _scope = Scope;
    open()
}

/// SQLite's default page-cache methods, which serve every cache that is not the engine's.
struct DefaultMethods(ffi::sqlite3_pcache_methods2);

// SAFETY: the methods are plain function pointers and SQLite's `pArg` for them, which SQLite
// itself shares between threads; they are written once, before SQLite initializes.
unsafe impl Send for DefaultMethods {}
// SAFETY: as above; the value is never changed after it is set.
unsafe impl Sync for DefaultMethods {}

static DEFAULT_METHODS: OnceLock<DefaultMethods> = OnceLock::new();

/// Whether [`install`] succeeded (decided once per process).
static INSTALLED: OnceLock<bool> = OnceLock::new();

/// Makes this module SQLite's page cache, if SQLite has not initialized yet; returns whether
/// it is. Idempotent. Every store of this crate calls it before it opens a connection. When
/// something else initialized SQLite first, the engine runs on SQLite's default cache: the
/// same results, at the cost the module documentation describes.
pub fn install() -> bool {
    *INSTALLED.get_or_init(|| {
        let mut defaults = MaybeUninit::<ffi::sqlite3_pcache_methods2>::zeroed();
        // SAFETY: SQLITE_CONFIG_GETPCACHE2 writes one `sqlite3_pcache_methods2`; it fails
        // with SQLITE_MISUSE, writing nothing, once SQLite has initialized.
        let code =
            unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, defaults.as_mut_ptr()) };
        if code != ffi::SQLITE_OK {
            return false;
        }
        // SAFETY: written by SQLite above (and zeroed before, so valid in any case).
        let defaults = unsafe { defaults.assume_init() };
        if defaults.xFetch.is_none() || DEFAULT_METHODS.set(DefaultMethods(defaults)).is_err() {
            return false;
        }
        let methods = ffi::sqlite3_pcache_methods2 {
            iVersion: 1,
            pArg: ptr::null_mut(),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            xCreate: Some(x_create),
            xCachesize: Some(x_cachesize),
            xPagecount: Some(x_pagecount),
            xFetch: Some(x_fetch),
            xUnpin: Some(x_unpin),
            xRekey: Some(x_rekey),
            xTruncate: Some(x_truncate),
            xDestroy: Some(x_destroy),
            xShrink: Some(x_shrink),
        };
        // SAFETY: SQLite copies the struct; every method is defined below.
        let code = unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_PCACHE2,
                &methods as *const ffi::sqlite3_pcache_methods2,
            )
        };
        code == ffi::SQLITE_OK
    })
}

fn defaults() -> &'static ffi::sqlite3_pcache_methods2 {
    // Set before SQLite could call any method of this module (see `install`).
    &DEFAULT_METHODS
        .get()
        .expect("page-cache methods are installed only after the defaults are saved")
        .0
}

/// Page numbers per chunk of the [`PageIndex`]: 64 KiB of entries on wasm32, one Wasm page,
/// so that the entries of a 16,384-page (64 MiB) database share one page for the
/// `master-2026` profile's per-Wasm-page charge (docs/metering.md §6).
const INDEX_CHUNK: usize = 16_384;

/// One chunk of the [`PageIndex`]: [`INDEX_CHUNK`] entries, null when allocated, aligned to
/// [`SLAB_ALIGN`] inside an allocation of its own (aligned by hand, as the page slabs are).
struct IndexChunk {
    entries: NonNull<*mut Slot>,
    allocation: NonNull<u8>,
    layout: Layout,
}

impl IndexChunk {
    fn new() -> Option<Self> {
        let bytes = INDEX_CHUNK * mem::size_of::<*mut Slot>();
        let layout = Layout::from_size_align(bytes + SLAB_ALIGN, 8).ok()?;
        // SAFETY: the layout has a non-zero size.
        let allocation = NonNull::new(unsafe { alloc::alloc(layout) })?;
        let skip = allocation.as_ptr().align_offset(SLAB_ALIGN).min(SLAB_ALIGN);
        // SAFETY: `skip` ≤ SLAB_ALIGN, so the entries fit after it; they are 8-byte aligned
        // (SLAB_ALIGN is a multiple of 8) and written before any is read.
        let entries = unsafe {
            let entries = allocation.as_ptr().add(skip).cast::<*mut Slot>();
            ptr::write_bytes(entries, 0, INDEX_CHUNK);
            NonNull::new_unchecked(entries)
        };
        Some(Self {
            entries,
            allocation,
            layout,
        })
    }

    fn entry(&self, offset: usize) -> *mut *mut Slot {
        debug_assert!(offset < INDEX_CHUNK);
        // SAFETY: callers pass `key % INDEX_CHUNK`, inside the chunk.
        unsafe { self.entries.as_ptr().add(offset) }
    }
}

impl Drop for IndexChunk {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { alloc::dealloc(self.allocation.as_ptr(), self.layout) };
    }
}

/// Page number → slot (null where the page is not cached), in chunks of [`INDEX_CHUNK`]
/// allocated when a page number in them is first used: a lookup is two array reads, growing
/// never copies what is there, and the entries of pages used together share heap pages.
struct PageIndex {
    chunks: Vec<Option<IndexChunk>>,
    /// One more than the highest page number given an entry since the last
    /// [`PageIndex::shrink_to`]: pages at or above it are absent.
    end: usize,
}

impl PageIndex {
    fn get(&self, key: u32) -> *mut Slot {
        let key = key as usize;
        match self.chunks.get(key / INDEX_CHUNK) {
            // SAFETY: an entry of a live chunk, written when the chunk was made.
            Some(Some(chunk)) => unsafe { *chunk.entry(key % INDEX_CHUNK) },
            _ => ptr::null_mut(),
        }
    }

    /// Clears the entry of `key` if it is `slot`; says whether it was.
    fn clear_if(&mut self, key: u32, slot: *mut Slot) -> bool {
        let key = key as usize;
        let Some(Some(chunk)) = self.chunks.get(key / INDEX_CHUNK) else {
            return false;
        };
        let entry = chunk.entry(key % INDEX_CHUNK);
        // SAFETY: an entry of a live chunk; the cache is used by one thread at a time.
        unsafe {
            if *entry != slot {
                return false;
            }
            *entry = ptr::null_mut();
        }
        true
    }

    /// Sets the entry of `key` to `slot`, allocating its chunk if needed; false if that
    /// allocation failed.
    fn set(&mut self, key: u32, slot: *mut Slot) -> bool {
        let key = key as usize;
        let chunk_index = key / INDEX_CHUNK;
        if chunk_index >= self.chunks.len() {
            self.chunks.resize_with(chunk_index + 1, || None);
        }
        if self.chunks[chunk_index].is_none() {
            match IndexChunk::new() {
                Some(chunk) => self.chunks[chunk_index] = Some(chunk),
                None => return false,
            }
        }
        let Some(chunk) = &self.chunks[chunk_index] else {
            return false;
        };
        // SAFETY: an entry of a live chunk; the cache is used by one thread at a time.
        unsafe { *chunk.entry(key % INDEX_CHUNK) = slot };
        self.end = self.end.max(key + 1);
        true
    }

    /// Every page number at or above this one is absent.
    fn span(&self) -> usize {
        self.end
    }

    /// The first page at or after number `from` and before `to`, skipping chunks never
    /// allocated, so that a sweep over a sparse index costs what its pages do.
    fn next_page(&self, mut from: usize, to: usize) -> Option<(usize, NonNull<Slot>)> {
        while from < to {
            match self.chunks.get(from / INDEX_CHUNK) {
                Some(Some(chunk)) => {
                    // SAFETY: an entry of a live chunk, written when the chunk was made.
                    if let Some(slot) = NonNull::new(unsafe { *chunk.entry(from % INDEX_CHUNK) }) {
                        return Some((from, slot));
                    }
                    from += 1;
                }
                Some(None) => from = (from / INDEX_CHUNK + 1) * INDEX_CHUNK,
                None => return None,
            }
        }
        None
    }

    /// Frees the chunks that hold only page numbers from `limit` on (which must be absent).
    fn shrink_to(&mut self, limit: usize) {
        self.chunks.truncate(limit.div_ceil(INDEX_CHUNK));
        self.end = self.end.min(limit);
    }
}

/// What SQLite holds as a `sqlite3_pcache*`: one of ours, or one of SQLite's own with its
/// methods at hand (no lookup of the saved defaults on every call).
enum Cache {
    Stable(StableCache),
    Default(
        NonNull<ffi::sqlite3_pcache>,
        &'static ffi::sqlite3_pcache_methods2,
    ),
}

/// Bookkeeping of one cached page, right after its SQLite header (`pExtra`) so that the
/// flag a fetch sets dirties the heap page SQLite's own `nRef++` dirties anyway.
#[repr(C)]
struct Slot {
    /// What SQLite sees: the page buffer and the header. First, so a `*mut Slot` is the
    /// `*mut sqlite3_pcache_page` SQLite is given.
    page: ffi::sqlite3_pcache_page,
    key: u32,
    pinned: bool,
}

/// One of this module's caches (see the [module](self) documentation).
struct StableCache {
    page_size: usize,
    /// SQLite's per-page header size, rounded up to 8.
    extra_size: usize,
    /// Bytes from one header to the next: header, then its [`Slot`].
    stride: usize,
    purgeable: bool,
    /// `PRAGMA cache_size`, in pages.
    max_pages: usize,
    /// Page number → its slot ...
    index: PageIndex,
    /// ... except for the pending-byte page, page numbers from [`MAX_INDEXED_PAGE`] on and
    /// pages whose index chunk could not be allocated, kept here; almost always empty.
    far: BTreeMap<u32, *mut Slot>,
    /// The pending-byte page's number at this page size.
    pending_byte_page: u32,
    pages: usize,
    /// Slots whose page was dropped, and unused ones of the newest slabs.
    free: Vec<*mut Slot>,
    /// Every allocation, freed with the cache.
    slabs: Vec<(NonNull<u8>, Layout)>,
    /// The next unused header of the newest header slab, and how many are left in it.
    next_header: *mut u8,
    headers_left: usize,
    /// Where the next eviction search starts.
    hand: usize,
    /// Set when an eviction search found every indexed page pinned, cleared when a page is
    /// unpinned: while it is set, a fetch over the limit does not search again. SQLite keeps
    /// a write transaction's dirty pages pinned, and with `cache_spill` off it asks for each
    /// new page twice (`create` 1, then 2), so a transaction larger than the cache would
    /// otherwise scan the whole index twice for every page it adds.
    all_pinned: bool,
}

impl StableCache {
    fn new(page_size: usize, extra_size: usize, purgeable: bool) -> Self {
        let extra_size = extra_size.next_multiple_of(8);
        let stride = (extra_size + mem::size_of::<Slot>()).next_multiple_of(8);
        Self {
            page_size,
            extra_size,
            stride,
            purgeable,
            max_pages: usize::MAX,
            index: PageIndex {
                chunks: Vec::new(),
                end: 0,
            },
            far: BTreeMap::new(),
            pending_byte_page: u32::try_from(PENDING_BYTE as usize / page_size + 1)
                .unwrap_or(u32::MAX),
            pages: 0,
            free: Vec::new(),
            slabs: Vec::new(),
            next_header: ptr::null_mut(),
            headers_left: 0,
            hand: 0,
            all_pinned: false,
        }
    }

    /// Whether page number `key` is kept in the short list rather than the index.
    fn is_far(&self, key: u32) -> bool {
        key == self.pending_byte_page || key >= MAX_INDEXED_PAGE
    }

    fn lookup(&self, key: u32) -> Option<NonNull<Slot>> {
        if !self.is_far(key) {
            if let Some(slot) = NonNull::new(self.index.get(key)) {
                return Some(slot);
            }
        }
        if self.far.is_empty() {
            return None;
        }
        self.far.get(&key).and_then(|&slot| NonNull::new(slot))
    }

    /// Files `slot` under page number `key` (which has no page): in the index, or in the
    /// map of far pages for far page numbers and when the index cannot allocate a chunk.
    fn set(&mut self, key: u32, slot: *mut Slot) {
        if self.is_far(key) || !self.index.set(key, slot) {
            self.far.insert(key, slot);
        }
    }

    /// Forgets page number `key` if `slot` holds it; says whether it did.
    fn unset(&mut self, key: u32, slot: *mut Slot) -> bool {
        if !self.is_far(key) && self.index.clear_if(key, slot) {
            return true;
        }
        if self.far.get(&key) == Some(&slot) {
            self.far.remove(&key);
            return true;
        }
        false
    }

    /// SQLite's `xFetch`: the cached page `key`, or a new one when `create` allows.
    fn fetch(&mut self, key: u32, create: c_int) -> *mut ffi::sqlite3_pcache_page {
        if let Some(slot) = self.lookup(key) {
            let slot = slot.as_ptr();
            // SAFETY: every non-null entry of the index is a live slot of this cache.
            unsafe {
                if !(*slot).pinned {
                    (*slot).pinned = true;
                }
            }
            return slot.cast();
        }
        if create == 0 || key == 0 {
            return ptr::null_mut();
        }
        if self.purgeable && self.pages >= self.max_pages && !self.evict_one() && create == 1 {
            // "Only if it is easy": SQLite will spill or retry with create = 2.
            return ptr::null_mut();
        }
        let Some(slot) = self.take_free_slot() else {
            return ptr::null_mut();
        };
        self.set(key, slot);
        self.pages += 1;
        update_stats(|stats| stats.pages += 1);
        // SAFETY: `slot` is a slot of this cache, not in use; SQLite needs the first 8 bytes
        // of a new page's header zero (that is how it tells a new page from a cached one).
        unsafe {
            (*slot).key = key;
            (*slot).pinned = true;
            ptr::write_bytes((*slot).page.pExtra.cast::<u8>(), 0, 8.min(self.extra_size));
        }
        slot.cast()
    }

    /// Drops one unpinned page, if there is one: the next one on the clock hand's way round
    /// the index, else a far one.
    fn evict_one(&mut self) -> bool {
        if self.all_pinned {
            return false;
        }
        let span = self.index.span();
        let hand = self.hand.min(span);
        for (from, to) in [(hand, span), (0, hand)] {
            let mut at = from;
            while let Some((key, slot)) = self.index.next_page(at, to) {
                // SAFETY: a live slot of this cache.
                if !unsafe { slot.as_ref() }.pinned {
                    self.hand = key + 1;
                    self.remove(slot.as_ptr());
                    return true;
                }
                at = key + 1;
            }
        }
        // SAFETY (in the filter): far slots are live slots of this cache.
        let far = self
            .far
            .values()
            .copied()
            .find(|&slot| !unsafe { (*slot).pinned });
        if let Some(slot) = far {
            self.remove(slot);
            return true;
        }
        self.all_pinned = true;
        false
    }

    /// Takes a slot from the free list, allocating a slab of them when it is empty.
    fn take_free_slot(&mut self) -> Option<*mut Slot> {
        if self.free.is_empty() {
            self.allocate_slab()?;
        }
        self.free.pop()
    }

    /// Allocates a slab of page buffers ([`BUFFER_SLAB_BYTES`], [`SLAB_ALIGN`]-aligned) with a
    /// header each and puts their slots on the free list, lowest address last so it is used
    /// first.
    fn allocate_slab(&mut self) -> Option<()> {
        let pages = (BUFFER_SLAB_BYTES / self.page_size).clamp(1, HEADERS_PER_SLAB);
        if self.headers_left < pages {
            let headers = Layout::from_size_align(self.stride * HEADERS_PER_SLAB, 8).ok()?;
            // SAFETY: the layout has a non-zero size.
            let base = NonNull::new(unsafe { alloc::alloc(headers) })?;
            self.slabs.push((base, headers));
            self.next_header = base.as_ptr();
            self.headers_left = HEADERS_PER_SLAB;
        }
        // Page sizes are powers of two up to 64 KiB, so the aligned start also aligns pages.
        let buffers = Layout::from_size_align(self.page_size * pages + SLAB_ALIGN, 8).ok()?;
        // SAFETY: the layout has a non-zero size.
        let slab = NonNull::new(unsafe { alloc::alloc(buffers) })?;
        self.slabs.push((slab, buffers));
        let skip = slab.as_ptr().align_offset(SLAB_ALIGN).min(SLAB_ALIGN);
        // SAFETY: `skip` ≤ SLAB_ALIGN, so the pages fit in the slab after it.
        let buffer_base = unsafe { slab.as_ptr().add(skip) };
        let header_base = self.next_header;
        // SAFETY: at least `pages` headers are left in the header slab.
        self.next_header = unsafe { header_base.add(pages * self.stride) };
        self.headers_left -= pages;
        for index in (0..pages).rev() {
            // SAFETY: both offsets are inside the slabs allocated for them, the slot is 8-byte
            // aligned (stride and extra size are multiples of 8).
            unsafe {
                let extra = header_base.add(index * self.stride);
                let slot = extra.add(self.extra_size).cast::<Slot>();
                slot.write(Slot {
                    page: ffi::sqlite3_pcache_page {
                        pBuf: buffer_base.add(index * self.page_size).cast(),
                        pExtra: extra.cast(),
                    },
                    key: 0,
                    pinned: false,
                });
                self.free.push(slot);
            }
        }
        Some(())
    }

    /// Drops a cached page: its number is forgotten and its slot reused.
    fn remove(&mut self, slot: *mut Slot) {
        // SAFETY: callers pass live slots of this cache.
        let key = unsafe { (*slot).key };
        if self.unset(key, slot) {
            self.release(slot);
        }
    }

    /// Counts a slot whose page number is forgotten out and puts it on the free list.
    fn release(&mut self, slot: *mut Slot) {
        self.pages -= 1;
        update_stats(|stats| stats.pages = stats.pages.saturating_sub(1));
        self.free.push(slot);
    }

    /// SQLite's `xUnpin`: a page over the limit (a write transaction's dirty pages stay
    /// pinned however many there are) is dropped rather than kept.
    fn unpin(&mut self, slot: *mut Slot, discard: bool) {
        if discard || (self.purgeable && self.pages > self.max_pages) {
            self.remove(slot);
        } else {
            // SAFETY: SQLite unpins pages this cache gave it.
            unsafe { (*slot).pinned = false };
            if self.all_pinned {
                self.all_pinned = false;
            }
        }
    }

    fn rekey(&mut self, slot: *mut Slot, old_key: u32, new_key: u32) {
        // SQLite never rekeys a page to its own number; if it did, removing "the other page"
        // below would free this one.
        if old_key == new_key {
            return;
        }
        if let Some(other) = self.lookup(new_key) {
            self.remove(other.as_ptr());
        }
        self.unset(old_key, slot);
        self.set(new_key, slot);
        // SAFETY: SQLite rekeys pages this cache gave it.
        unsafe { (*slot).key = new_key };
    }

    /// Drops every page numbered `limit` or above.
    fn truncate(&mut self, limit: u32) {
        let span = self.index.span();
        let mut at = limit as usize;
        while let Some((key, slot)) = self.index.next_page(at, span) {
            self.remove(slot.as_ptr());
            at = key + 1;
        }
        self.index.shrink_to(limit as usize);
        for (_, slot) in self.far.split_off(&limit) {
            self.release(slot);
        }
    }
}

impl Drop for StableCache {
    fn drop(&mut self) {
        update_stats(|stats| {
            // Saturating: a connection closed on another thread than the one that opened it
            // was counted there.
            stats.caches = stats.caches.saturating_sub(1);
            stats.pages = stats.pages.saturating_sub(self.pages);
        });
        for (base, layout) in self.slabs.drain(..) {
            // SAFETY: allocated by `allocate_slab` with this layout, freed once.
            unsafe { alloc::dealloc(base.as_ptr(), layout) };
        }
    }
}

/// The cache behind SQLite's handle.
///
/// # Safety
/// `cache` is a handle `x_create` returned and `x_destroy` has not freed.
unsafe fn cache<'a>(cache: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    &mut *cache.cast::<Cache>()
}

unsafe extern "C" fn x_init(_arg: *mut c_void) -> c_int {
    match defaults().xInit {
        Some(init) => init(defaults().pArg),
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_shutdown(_arg: *mut c_void) {
    if let Some(shutdown) = defaults().xShutdown {
        shutdown(defaults().pArg);
    }
}

unsafe extern "C" fn x_create(
    page_size: c_int,
    extra_size: c_int,
    purgeable: c_int,
) -> *mut ffi::sqlite3_pcache {
    let stable = STABLE_SCOPE.with(Cell::get) > 0;
    let (Ok(page_size_bytes), Ok(extra_bytes)) =
        (usize::try_from(page_size), usize::try_from(extra_size))
    else {
        return ptr::null_mut();
    };
    let cache = if stable && page_size_bytes.is_power_of_two() {
        update_stats(|stats| stats.caches += 1);
        Cache::Stable(StableCache::new(
            page_size_bytes,
            extra_bytes,
            purgeable != 0,
        ))
    } else {
        let Some(create) = defaults().xCreate else {
            return ptr::null_mut();
        };
        match NonNull::new(create(page_size, extra_size, purgeable)) {
            Some(inner) => Cache::Default(inner, defaults()),
            None => return ptr::null_mut(),
        }
    };
    Box::into_raw(Box::new(cache)).cast()
}

unsafe extern "C" fn x_cachesize(handle: *mut ffi::sqlite3_pcache, pages: c_int) {
    match cache(handle) {
        Cache::Stable(cache) => cache.max_pages = usize::try_from(pages).unwrap_or(0).max(1),
        Cache::Default(inner, methods) => {
            if let Some(cachesize) = methods.xCachesize {
                cachesize(inner.as_ptr(), pages);
            }
        }
    }
}

unsafe extern "C" fn x_pagecount(handle: *mut ffi::sqlite3_pcache) -> c_int {
    match cache(handle) {
        Cache::Stable(cache) => c_int::try_from(cache.pages).unwrap_or(c_int::MAX),
        Cache::Default(inner, methods) => match methods.xPagecount {
            Some(pagecount) => pagecount(inner.as_ptr()),
            None => 0,
        },
    }
}

unsafe extern "C" fn x_fetch(
    handle: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    match cache(handle) {
        Cache::Stable(cache) => cache.fetch(key, create),
        Cache::Default(inner, methods) => match methods.xFetch {
            Some(fetch) => fetch(inner.as_ptr(), key, create),
            None => ptr::null_mut(),
        },
    }
}

unsafe extern "C" fn x_unpin(
    handle: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    discard: c_int,
) {
    match cache(handle) {
        Cache::Stable(cache) => cache.unpin(page.cast(), discard != 0),
        Cache::Default(inner, methods) => {
            if let Some(unpin) = methods.xUnpin {
                unpin(inner.as_ptr(), page, discard);
            }
        }
    }
}

unsafe extern "C" fn x_rekey(
    handle: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old_key: c_uint,
    new_key: c_uint,
) {
    match cache(handle) {
        Cache::Stable(cache) => cache.rekey(page.cast(), old_key, new_key),
        Cache::Default(inner, methods) => {
            if let Some(rekey) = methods.xRekey {
                rekey(inner.as_ptr(), page, old_key, new_key);
            }
        }
    }
}

unsafe extern "C" fn x_truncate(handle: *mut ffi::sqlite3_pcache, limit: c_uint) {
    match cache(handle) {
        Cache::Stable(cache) => cache.truncate(limit),
        Cache::Default(inner, methods) => {
            if let Some(truncate) = methods.xTruncate {
                truncate(inner.as_ptr(), limit);
            }
        }
    }
}

unsafe extern "C" fn x_destroy(handle: *mut ffi::sqlite3_pcache) {
    let cache = Box::from_raw(handle.cast::<Cache>());
    if let Cache::Default(inner, methods) = *cache {
        if let Some(destroy) = methods.xDestroy {
            destroy(inner.as_ptr());
        }
    }
}

unsafe extern "C" fn x_shrink(handle: *mut ffi::sqlite3_pcache) {
    // This module's caches keep their slabs: the hint is for SQLite's own.
    if let Cache::Default(inner, methods) = cache(handle) {
        if let Some(shrink) = methods.xShrink {
            shrink(inner.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4_096;
    /// The pending-byte page with 4 KiB pages, where SQLite parks pages it renumbers.
    const PENDING_BYTE_PAGE: u32 = 0x4000_0000 / 4_096 + 1;

    fn cache() -> StableCache {
        update_stats(|stats| stats.caches += 1);
        StableCache::new(PAGE, 60, true)
    }

    fn fetch(cache: &mut StableCache, key: u32, create: c_int) -> *mut Slot {
        cache.fetch(key, create).cast()
    }

    #[test]
    fn a_page_is_created_once_and_found_again_with_a_zeroed_header() {
        let mut cache = cache();
        assert!(fetch(&mut cache, 5, 0).is_null(), "lookups do not create");
        let page = fetch(&mut cache, 5, 2);
        assert!(!page.is_null());
        // SAFETY: a live slot of `cache`.
        let (buffer, extra) = unsafe { ((*page).page.pBuf, (*page).page.pExtra) };
        assert_eq!(buffer as usize % PAGE, 0, "page buffers are page-aligned");
        assert_eq!(extra as usize % 8, 0);
        // SAFETY: the header has at least 8 bytes.
        assert_eq!(unsafe { *extra.cast::<u64>() }, 0);
        assert_eq!(fetch(&mut cache, 5, 0), page);
        assert_eq!(fetch(&mut cache, 5, 2), page);
        assert_eq!(cache.pages, 1);
    }

    #[test]
    fn renumbering_through_the_pending_byte_page_keeps_the_index_small() {
        let mut cache = cache();
        let a = fetch(&mut cache, 10, 2);
        let b = fetch(&mut cache, 11, 2);
        // balance_nonroot's swap: a → temporary, b → 10, a → 11.
        cache.rekey(a, 10, PENDING_BYTE_PAGE);
        assert!(
            cache.index.span() <= INDEX_CHUNK,
            "index of {} entries",
            cache.index.span()
        );
        assert_eq!(
            cache.lookup(PENDING_BYTE_PAGE).map(NonNull::as_ptr),
            Some(a)
        );
        cache.rekey(b, 11, 10);
        cache.rekey(a, PENDING_BYTE_PAGE, 11);
        assert_eq!(fetch(&mut cache, 10, 0), b);
        assert_eq!(fetch(&mut cache, 11, 0), a);
        assert!(cache.lookup(PENDING_BYTE_PAGE).is_none());
        assert!(cache.far.is_empty());
        assert_eq!(cache.pages, 2);
    }

    #[test]
    fn a_corrupt_page_number_does_not_grow_the_index() {
        let mut cache = cache();
        let far = fetch(&mut cache, u32::MAX - 1, 2);
        assert_eq!(cache.index.span(), 0);
        assert_eq!(fetch(&mut cache, u32::MAX - 1, 0), far);
        let near = fetch(&mut cache, 20_000, 2);
        let chunks = cache
            .index
            .chunks
            .iter()
            .filter(|chunk| chunk.is_some())
            .count();
        assert_eq!(chunks, 1, "only the chunk of page 20,000 is allocated");
        assert_eq!(cache.index.span(), 20_001);
        assert_eq!(fetch(&mut cache, 20_000, 0), near);
        cache.unpin(far, true);
        assert!(fetch(&mut cache, u32::MAX - 1, 0).is_null());
        assert_eq!(cache.pages, 1);
    }

    #[test]
    fn pages_past_the_old_limit_of_the_index_are_indexed_and_evicted() {
        // 2^22 pages is 2 GiB at 512 B per page: a database a canister can hold.
        let mut cache = cache();
        cache.max_pages = 4;
        let base = 1 << 22;
        for key in base..base + 100 {
            let page = fetch(&mut cache, key, 2);
            cache.unpin(page, false);
        }
        assert!(cache.far.is_empty(), "indexed, not in the map of far pages");
        assert!(cache.pages <= 4, "{} pages", cache.pages);
    }

    #[test]
    fn far_pages_are_found_in_a_map_and_evicted_like_the_others() {
        let mut cache = cache();
        cache.max_pages = 8;
        let base = MAX_INDEXED_PAGE;
        for key in base..base + 1_000 {
            let page = fetch(&mut cache, key, 2);
            assert_eq!(fetch(&mut cache, key, 0), page);
            cache.unpin(page, false);
        }
        assert!(cache.pages <= 8, "{} pages", cache.pages);
        assert_eq!(cache.far.len(), cache.pages);
        assert_eq!(cache.index.span(), 0);
        cache.truncate(base + 995);
        assert!(cache.far.keys().all(|&key| key < base + 995));
        assert_eq!(cache.far.len(), cache.pages);
    }

    #[test]
    fn truncation_drops_every_page_from_the_limit_on_and_reuses_their_slots() {
        let mut cache = cache();
        for key in 1..=40 {
            fetch(&mut cache, key, 2);
        }
        fetch(&mut cache, PENDING_BYTE_PAGE, 2);
        cache.truncate(31);
        assert_eq!(cache.pages, 30);
        assert!((31..=40).all(|key| fetch(&mut cache, key, 0).is_null()));
        assert!(cache.lookup(PENDING_BYTE_PAGE).is_none());
        assert!(!fetch(&mut cache, 30, 0).is_null());
        // The dropped pages' slots come back before a new slab is allocated.
        let slabs = cache.slabs.len();
        for key in 31..=41 {
            fetch(&mut cache, key, 2);
        }
        assert_eq!(cache.slabs.len(), slabs);
    }

    #[test]
    fn a_full_cache_replaces_unpinned_pages_and_never_pinned_ones() {
        let mut cache = cache();
        cache.max_pages = 3;
        let pinned = fetch(&mut cache, 1, 2);
        for key in 2..=50 {
            let page = fetch(&mut cache, key, 2);
            cache.unpin(page, false);
        }
        assert!(cache.pages <= 3, "{} pages", cache.pages);
        assert_eq!(fetch(&mut cache, 1, 0), pinned);
        // Everything pinned: "if it is easy" fails, "even if it is hard" goes over the size.
        let mut cache = self::cache();
        cache.max_pages = 2;
        fetch(&mut cache, 1, 2);
        fetch(&mut cache, 2, 2);
        assert!(fetch(&mut cache, 3, 1).is_null());
        assert!(!fetch(&mut cache, 3, 2).is_null());
        assert_eq!(cache.pages, 3);
        // Unpinned while over the size: dropped at once.
        let page = fetch(&mut cache, 3, 0);
        cache.unpin(page, false);
        assert!(fetch(&mut cache, 3, 0).is_null());
    }
}
