//! [`FileMemory`]: an ic-stable-structures [`Memory`] on a file, with an atomic commit per
//! request, so that every engine written for a canister's stable memory (the page tree, the
//! B-tree, the stable-memory SQLite) runs on an edge host unchanged.
//!
//! # Why
//! On the IC a message is atomic: a trap discards its every write (docs/metering.md §7). On a
//! file nothing is: a request killed half-way leaves half its writes, and a power cut keeps
//! an arbitrary subset of the writes not yet synced. The engines assume the IC's rollback, so
//! this memory gives it back:
//! - a request's writes stay in the heap, as dirty 4 KiB blocks, until [`FileMemory::commit`]
//!   (reads see them; the file does not); what it reads of the file is read in 64 KiB units,
//!   each once per open;
//! - the commit writes every dirty block to a redo journal beside the file and syncs it (the
//!   commit point), then writes the blocks to the file, syncs it, and empties the journal
//!   ([`journal`] has the format);
//! - opening replays a complete journal (its checksum matches) and discards a torn one.
//!
//! After a kill or a power cut at any instant the file holds either the whole of a commit or
//! none of it, and a commit that returned `Ok` is never lost. A commit costs two syncs: the
//! journal's, and the file's before the journal may be reused. The `tests` module holds both
//! claims against a simulated disk that drops unsynced writes at every crash point
//! ([`sim`]).
//!
//! # Exclusive access
//! One `FileMemory` must be the only writer of its file while it is open, and no reader may
//! look at the file while a commit applies: the caller serializes requests (the edge layer's
//! lock file). Two handles of one `FileMemory` ([`Clone`]) share its state.
//!
//! # Errors
//! [`Memory`]'s methods return no errors: a failed read of the file panics (in a Wasm
//! component, a trap that ends the request with nothing committed). A failed commit returns
//! [`StoreError::Storage`] and leaves the file as before the commit or, if it failed after
//! the journal was synced, as the next open will complete it.

mod disk;
mod journal;
#[cfg(any(test, all(target_os = "wasi", target_env = "p2")))]
mod preopen;
pub mod sim;
#[cfg(test)]
mod tests;

pub use disk::{DiskFile, StdFile};
#[cfg(all(target_os = "wasi", target_env = "p2"))]
mod wasi_file;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
pub use wasi_file::WasiFile;

use crate::error::StoreError;
use ic_stable_structures::Memory;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The unit of change tracking and of the journal: a 4 KiB OS page (the unit a disk writes
/// and the IC's meter counts in, docs/metering.md §6).
pub const BLOCK_BYTES: usize = 4096;

/// A Wasm page, the unit of [`Memory::size`] and [`Memory::grow`].
const WASM_PAGE_BYTES: u64 = 65_536;

/// The unit the file is read in: a Wasm page, the unit the engines lay their nodes and leaves
/// out in, so a lookup reads its page once rather than a few bytes at a time.
const READ_UNIT_BYTES: u64 = WASM_PAGE_BYTES;

/// Units kept per open (16 MiB); past it the cache starts again.
const MAX_CACHED_UNITS: usize = 256;

/// The largest memory a `FileMemory` grows to unless told otherwise: 2^20 Wasm pages, 64 GiB.
pub const DEFAULT_MAX_PAGES: u64 = 1 << 20;

/// Counters of the file operations of one `FileMemory`, since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounters {
    /// Syncs of the file or the journal (`fdatasync`).
    pub syncs: u64,
    /// Bytes read from the file and the journal.
    pub bytes_read: u64,
    /// Bytes written to the file and the journal.
    pub bytes_written: u64,
    /// Read calls.
    pub reads: u64,
    /// Write calls.
    pub writes: u64,
}

/// What one [`FileMemory::commit`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitReport {
    /// The 4 KiB blocks written (to the journal, then to the file).
    pub blocks: u64,
    /// The syncs it made: 0 for a commit with nothing to write, 2 otherwise (3 for the first
    /// commit of a memory opened by [`FileMemory::open`]: its directory too).
    pub syncs: u64,
}

/// A [`Memory`] on a file with an atomic commit per request (see the module's docs).
#[derive(Clone)]
pub struct FileMemory {
    state: Rc<RefCell<State>>,
}

struct State {
    data: Box<dyn DiskFile>,
    journal: Box<dyn DiskFile>,
    /// The memory's size as committed, in bytes (the data file's length).
    committed_bytes: u64,
    /// The memory's size with this request's growth, in bytes.
    size_bytes: u64,
    max_pages: u64,
    /// This request's changed blocks, by block number.
    dirty: BTreeMap<u64, Box<[u8; BLOCK_BYTES]>>,
    /// Committed bytes read in this open, by [`READ_UNIT_BYTES`] unit: a request reads each
    /// unit of the file once (a host call per read is most of a small request's time).
    /// (A B-tree map: a lookup here is a few comparisons, where the default hash of a
    /// `HashMap` is most of a small read's instructions on the edge, docs/edge.md.)
    clean: BTreeMap<u64, Box<[u8]>>,
    /// A file whose directory must be synced before the first commit is relied on (its name
    /// and its journal's may not be durable yet).
    unsynced_directory: Option<PathBuf>,
    io: IoCounters,
}

impl FileMemory {
    /// Opens (or creates) the memory in the file at `path`, its journal at `path` + `-journal`.
    /// A complete journal left by an interrupted commit is applied first, a torn one
    /// discarded. The caller must hold exclusive access (the module's docs).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let memory = Self::with_files(open_file(path)?, open_file(&journal_path(path))?)?;
        // A memory with nothing committed may have just created its files: their names are
        // made durable at its first commit.
        {
            let mut state = memory.state.borrow_mut();
            if state.committed_bytes == 0 {
                state.unsynced_directory = Some(path.to_path_buf());
            }
        }
        Ok(memory)
    }

    /// Opens the memory on `data` with its journal in `journal` (any [`DiskFile`]: a real file
    /// or the simulated disk of [`sim`]), recovering an interrupted commit.
    pub fn with_files(
        data: Box<dyn DiskFile>,
        journal: Box<dyn DiskFile>,
    ) -> Result<Self, StoreError> {
        // The length before recovery may be anything a power cut left of an interrupted
        // commit; recovery settles it from the journal.
        let length = data
            .byte_len()
            .map_err(io_error("reading the file's length"))?;
        let mut state = State {
            data,
            journal,
            committed_bytes: length,
            size_bytes: length,
            max_pages: DEFAULT_MAX_PAGES,
            dirty: BTreeMap::new(),
            clean: BTreeMap::new(),
            unsynced_directory: None,
            io: IoCounters::default(),
        };
        state.recover()?;
        if !state.committed_bytes.is_multiple_of(WASM_PAGE_BYTES) {
            return Err(StoreError::storage(
                "opening a file memory",
                format!(
                    "{} bytes is not a whole number of 64 KiB pages",
                    state.committed_bytes
                ),
            ));
        }
        Ok(Self {
            state: Rc::new(RefCell::new(state)),
        })
    }

    /// Limits growth to `max_pages` Wasm pages (64 KiB each): [`Memory::grow`] past it fails,
    /// as stable memory does at its limit.
    pub fn with_max_pages(self, max_pages: u64) -> Self {
        self.state.borrow_mut().max_pages = max_pages;
        self
    }

    /// Makes every write since the open or the last commit durable, all or nothing.
    pub fn commit(&self) -> Result<CommitReport, StoreError> {
        self.state.borrow_mut().commit()
    }

    /// Discards every write since the open or the last commit.
    pub fn rollback(&self) {
        let mut state = self.state.borrow_mut();
        state.dirty.clear();
        state.size_bytes = state.committed_bytes;
    }

    /// Whether writes are waiting for a commit.
    pub fn has_changes(&self) -> bool {
        let state = self.state.borrow();
        !state.dirty.is_empty() || state.size_bytes != state.committed_bytes
    }

    /// The file operations so far.
    pub fn io(&self) -> IoCounters {
        self.state.borrow().io
    }
}

impl Memory for FileMemory {
    fn size(&self) -> u64 {
        self.state.borrow().size_bytes / WASM_PAGE_BYTES
    }

    fn grow(&self, pages: u64) -> i64 {
        let mut state = self.state.borrow_mut();
        let old_pages = state.size_bytes / WASM_PAGE_BYTES;
        match old_pages.checked_add(pages) {
            Some(new_pages) if new_pages <= state.max_pages => {
                state.size_bytes = new_pages * WASM_PAGE_BYTES;
                old_pages as i64
            }
            _ => -1,
        }
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        self.state.borrow_mut().read(offset, dst);
    }

    fn write(&self, offset: u64, src: &[u8]) {
        self.state.borrow_mut().write(offset, src);
    }
}

impl State {
    /// Applies a complete journal and empties it; empties a torn one.
    fn recover(&mut self) -> Result<(), StoreError> {
        let length = self
            .journal
            .byte_len()
            .map_err(io_error("reading the journal's length"))?;
        if length == 0 {
            return Ok(());
        }
        let length = usize::try_from(length).map_err(|_| {
            StoreError::storage("reading the journal", "longer than this host can address")
        })?;
        let mut bytes = vec![0; length];
        self.journal
            .read_at(0, &mut bytes)
            .map_err(io_error("reading the journal"))?;
        self.io.reads += 1;
        self.io.bytes_read += length as u64;
        if let journal::Found::Complete(found) = journal::decode(&bytes) {
            // The file's length may be anything between the old and the new one: set it.
            self.apply(
                found.size_bytes,
                found.blocks.iter().map(|(no, d)| (*no, &**d)),
                Length::Set,
            )?;
            self.committed_bytes = found.size_bytes;
            self.size_bytes = found.size_bytes;
        }
        // Complete and applied (the file synced), or torn (never a commit): either way done.
        // Not synced: a journal found again after a crash is replayed again, harmlessly.
        self.journal
            .set_len(0)
            .map_err(io_error("emptying the journal"))
    }

    fn commit(&mut self) -> Result<CommitReport, StoreError> {
        if self.dirty.is_empty() && self.size_bytes == self.committed_bytes {
            return Ok(CommitReport::default());
        }
        let blocks = std::mem::take(&mut self.dirty);
        let size_bytes = self.size_bytes;
        let syncs_before = self.io.syncs;
        if let Err(error) = self.write_through_journal(size_bytes, &blocks) {
            // What the file holds is decided at the next open (the journal was synced or it
            // was not); this request's writes are gone either way.
            self.size_bytes = self.committed_bytes;
            return Err(error);
        }
        self.committed_bytes = size_bytes;
        // The file changed under the cached units.
        self.clean.clear();
        Ok(CommitReport {
            blocks: blocks.len() as u64,
            syncs: self.io.syncs - syncs_before,
        })
    }

    /// The commit itself: journal written and synced, then applied and the file synced, then
    /// the journal emptied.
    fn write_through_journal(
        &mut self,
        size_bytes: u64,
        blocks: &BTreeMap<u64, Box<[u8; BLOCK_BYTES]>>,
    ) -> Result<(), StoreError> {
        let encoded = journal::encode(size_bytes, blocks.iter().map(|(no, d)| (*no, &**d)));
        // Written over the emptied journal; an older, longer journal whose emptying was lost
        // leaves bytes past its end, which the journal's own length excludes.
        self.journal
            .write_at(0, &encoded)
            .map_err(io_error("writing the journal"))?;
        self.count_write(encoded.len());
        self.journal
            .sync()
            .map_err(io_error("syncing the journal"))?;
        self.io.syncs += 1;
        if let Some(path) = self.unsynced_directory.take() {
            // The journal is found after a power cut only if its name survives it.
            sync_parent_directory(&path)?;
            self.io.syncs += 1;
        }
        self.apply(
            size_bytes,
            blocks.iter().map(|(no, d)| (*no, &**d)),
            Length::IfGrown,
        )?;
        self.journal
            .set_len(0)
            .map_err(io_error("emptying the journal"))
    }

    /// Writes `blocks` into the file, sets its length to `size_bytes` and syncs it.
    fn apply<'a>(
        &mut self,
        size_bytes: u64,
        blocks: impl Iterator<Item = (u64, &'a [u8; BLOCK_BYTES])>,
        length: Length,
    ) -> Result<(), StoreError> {
        if length == Length::Set || size_bytes != self.committed_bytes {
            self.data
                .set_len(size_bytes)
                .map_err(io_error("sizing the file"))?;
        }
        // Consecutive blocks go in one write.
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        for (block, data) in blocks {
            let offset = block * BLOCK_BYTES as u64;
            if offset >= size_bytes {
                continue;
            }
            if !run.is_empty() && run_start + run.len() as u64 != offset {
                self.write_run(run_start, &run)?;
                run.clear();
            }
            if run.is_empty() {
                run_start = offset;
            }
            run.extend_from_slice(data);
        }
        if !run.is_empty() {
            self.write_run(run_start, &run)?;
        }
        self.data.sync().map_err(io_error("syncing the file"))?;
        self.io.syncs += 1;
        Ok(())
    }

    fn write_run(&mut self, offset: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.data
            .write_at(offset, bytes)
            .map_err(io_error("writing the file"))?;
        self.count_write(bytes.len());
        Ok(())
    }

    fn count_write(&mut self, bytes: usize) {
        self.io.writes += 1;
        self.io.bytes_written += bytes as u64;
    }

    fn check_bounds(&self, offset: u64, len: usize, what: &str) {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > self.size_bytes) {
            panic!(
                "{what} out of bounds: {len} bytes at {offset} in a memory of {} bytes",
                self.size_bytes
            );
        }
    }

    fn read(&mut self, offset: u64, dst: &mut [u8]) {
        self.check_bounds(offset, dst.len(), "read");
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done as u64;
            let block = at / BLOCK_BYTES as u64;
            let within = (at % BLOCK_BYTES as u64) as usize;
            if let Some(data) = self.dirty.get(&block) {
                let count = (BLOCK_BYTES - within).min(dst.len() - done);
                dst[done..done + count].copy_from_slice(&data[within..within + count]);
                done += count;
                continue;
            }
            // A run of clean blocks, read from the file in one call.
            let mut end = (block + 1) * BLOCK_BYTES as u64;
            while end < offset + dst.len() as u64
                && !self.dirty.contains_key(&(end / BLOCK_BYTES as u64))
            {
                end += BLOCK_BYTES as u64;
            }
            let count = ((end - at) as usize).min(dst.len() - done);
            self.read_file(at, &mut dst[done..done + count]);
            done += count;
        }
    }

    /// Reads committed bytes through the cache of units; past the file's committed length
    /// (memory grown in this request), zeros.
    fn read_file(&mut self, offset: u64, dst: &mut [u8]) {
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done as u64;
            if at >= self.committed_bytes {
                dst[done..].fill(0);
                return;
            }
            let unit = at / READ_UNIT_BYTES;
            let within = (at % READ_UNIT_BYTES) as usize;
            let data = self.unit(unit);
            let count = (data.len() - within).min(dst.len() - done);
            dst[done..done + count].copy_from_slice(&data[within..within + count]);
            done += count;
        }
    }

    /// The committed bytes of `unit`, read from the file at its first use in this open.
    fn unit(&mut self, unit: u64) -> &[u8] {
        if !self.clean.contains_key(&unit) {
            if self.clean.len() >= MAX_CACHED_UNITS {
                self.clean.clear();
            }
            let start = unit * READ_UNIT_BYTES;
            let length = (self.committed_bytes - start).min(READ_UNIT_BYTES) as usize;
            let data = match self.data.read_owned(start, length) {
                Ok(data) => data,
                Err(error) => panic!("reading {length} bytes at {start} of a file memory: {error}"),
            };
            self.io.reads += 1;
            self.io.bytes_read += length as u64;
            self.clean.insert(unit, data);
        }
        &self.clean[&unit]
    }

    fn write(&mut self, offset: u64, src: &[u8]) {
        self.check_bounds(offset, src.len(), "write");
        let mut done = 0;
        while done < src.len() {
            let at = offset + done as u64;
            let block = at / BLOCK_BYTES as u64;
            let within = (at % BLOCK_BYTES as u64) as usize;
            let count = (BLOCK_BYTES - within).min(src.len() - done);
            if !self.dirty.contains_key(&block) {
                let mut data = Box::new([0u8; BLOCK_BYTES]);
                if count < BLOCK_BYTES {
                    self.read_file(block * BLOCK_BYTES as u64, &mut data[..]);
                }
                self.dirty.insert(block, data);
            }
            if let Some(data) = self.dirty.get_mut(&block) {
                data[within..within + count].copy_from_slice(&src[done..done + count]);
            }
            done += count;
        }
    }
}

/// Whether [`State::apply`] sets the file's length.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Length {
    /// Always: recovery, where a power cut may have left any length.
    Set,
    /// When the memory grew: a commit, where the file has its committed length.
    IfGrown,
}

fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-journal");
    PathBuf::from(name)
}

/// The file at `path`, opened for reading and writing and created if missing: through
/// `wasi:filesystem` itself in a `wasm32-wasip2` component ([`WasiFile`]), through `std::fs`
/// elsewhere.
fn open_file(path: &Path) -> Result<Box<dyn DiskFile>, StoreError> {
    let opening =
        |error: std::io::Error| StoreError::storage(&format!("opening {}", path.display()), error);
    #[cfg(all(target_os = "wasi", target_env = "p2"))]
    {
        WasiFile::open(path)
            .map(|file| Box::new(file) as Box<dyn DiskFile>)
            .map_err(opening)
    }
    #[cfg(not(all(target_os = "wasi", target_env = "p2")))]
    {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map(|file| Box::new(StdFile::new(file)) as Box<dyn DiskFile>)
            .map_err(opening)
    }
}

/// Makes a new file's name durable: its directory entry is data of the directory, which a
/// sync of the file does not cover. Hosts that cannot open a directory for syncing (some WASI
/// hosts answer "unsupported") are told apart from real failures.
fn sync_parent_directory(path: &Path) -> Result<(), StoreError> {
    let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    else {
        return Ok(());
    };
    match File::open(parent).and_then(|directory| directory.sync_all()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::Unsupported => Ok(()),
        Err(error) => Err(StoreError::storage("syncing the data directory", error)),
    }
}

fn io_error(context: &'static str) -> impl Fn(std::io::Error) -> StoreError {
    move |error| StoreError::storage(context, error)
}
