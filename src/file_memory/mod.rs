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
//!   (reads see them; the files do not); what it reads of the file is read in 4 KiB units,
//!   each once per open;
//! - the commit appends every dirty block to a write-ahead log beside the file and syncs it:
//!   **the commit point, and the commit's only sync** ([`log`] has the format);
//! - reads see the log's blocks over the file's; when the log passes
//!   [`DEFAULT_CHECKPOINT_BYTES`], the commit that passed it also copies the log's blocks into
//!   the file, syncs the file, and starts the next generation of the log in its other file
//!   (a checkpoint: one more sync, once every so many commits);
//! - opening reads the log's valid records (a torn or unsynced append ends it; only the last
//!   record can be torn, so only its bytes are checked) and lays them over the file.
//!
//! After a kill or a power cut at any instant the memory holds either the whole of a commit or
//! none of it, and a commit that returned `Ok` is never lost. The `tests` module holds both
//! claims against a simulated disk that drops unsynced writes at every crash point ([`sim`]).
//! A log left by the earlier format (a redo journal, [`journal`], applied with two syncs) is
//! completed at open.
//!
//! # Exclusive access, and readers beside it
//! One `FileMemory` must be the only writer of its files while it is open: the caller
//! serializes writers (the edge layer's lock file). Two handles of one `FileMemory`
//! ([`Clone`]) share its state.
//!
//! Readers may open the files beside that writer ([`FileMemory::open_shared`]) as long as no
//! checkpoint runs while they read: between checkpoints the file does not change (the log
//! holds every commit), an append to the log is either seen whole or dropped as torn by the
//! open's checks, and the log's generation a reader holds is never rewritten under it (the
//! next generation starts in the other file, at a checkpoint). A commit asks its
//! [`CheckpointGate`] before it checkpoints, so that the caller can hold checkpoints off
//! while readers read (the edge layer's `readers` module).
//!
//! # Errors
//! [`Memory`]'s methods return no errors: a failed read of the file panics (in a Wasm
//! component, a trap that ends the request with nothing committed). A failed commit returns
//! [`StoreError::Storage`], and the next open finds the commit whole (its log record was
//! synced) or not at all. A checkpoint that fails after its commit's record was synced does
//! not fail the commit, which is durable: the log keeps the blocks and the next commit tries
//! the checkpoint again.

mod disk;
mod journal;
mod log;
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

/// The unit of change tracking and of the log: a 4 KiB OS page (the unit a disk writes and
/// the IC's meter counts in, docs/metering.md §6).
pub const BLOCK_BYTES: usize = 4096;

/// A Wasm page, the unit of [`Memory::size`] and [`Memory::grow`].
const WASM_PAGE_BYTES: u64 = 65_536;

/// The unit the file is read in: a block. A lookup reads a few places of its 64 KiB page (a
/// search's probes), and a fresh instance pays for every byte it reads (the host's copy into
/// memory the instance has just grown): 4 KiB units read about a fifth of the bytes of 64 KiB
/// ones, for a few more host calls, and answered reads sooner (docs/edge.md, "Reads without
/// the lock", the measured choice).
const READ_UNIT_BYTES: u64 = BLOCK_BYTES as u64;

/// Bytes of units kept per open (16 MiB); past it the cache starts again.
const MAX_CACHED_BYTES: u64 = 16 << 20;

/// Units kept per open.
const MAX_CACHED_UNITS: usize = (MAX_CACHED_BYTES / READ_UNIT_BYTES) as usize;

/// The largest memory a `FileMemory` grows to unless told otherwise: 2^20 Wasm pages, 64 GiB.
pub const DEFAULT_MAX_PAGES: u64 = 1 << 20;

/// How long the log grows before a commit checkpoints it, unless told otherwise: 128 KiB.
/// Every open reads the whole log (and checks its last record), and a checkpoint costs one
/// sync: a one-row write logs a few 4 KiB blocks, so this is several commits per checkpoint
/// for a few 4 KiB reads' worth of bytes per open (docs/edge.md, "Atomic and durable").
pub const DEFAULT_CHECKPOINT_BYTES: u64 = 128 * 1024;

/// Counters of the file operations of one `FileMemory`, since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoCounters {
    /// Syncs of the file, the log or the directory (`fdatasync`).
    pub syncs: u64,
    /// Bytes read from the file and the log.
    pub bytes_read: u64,
    /// Bytes written to the file and the log.
    pub bytes_written: u64,
    /// Read calls.
    pub reads: u64,
    /// Write calls.
    pub writes: u64,
}

/// What one [`FileMemory::commit`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitReport {
    /// The 4 KiB blocks committed (appended to the log).
    pub blocks: u64,
    /// The syncs it made: 0 for a commit with nothing to write, 1 otherwise; one more when it
    /// checkpointed the log, and one more for the directory the first time a new file's name
    /// must survive a power cut.
    pub syncs: u64,
    /// Whether it checkpointed the log into the file.
    pub checkpointed: bool,
}

/// What a commit asks before it checkpoints the log into the file, and tells after it: a
/// caller whose readers open the files beside the writer ([`FileMemory::open_shared`]) holds
/// checkpoints off while one reads.
pub trait CheckpointGate {
    /// Whether the checkpoint may run now; `false` leaves it to a later commit (the log
    /// keeps its records and grows meanwhile).
    fn enter(&self) -> bool;
    /// The checkpoint that [`CheckpointGate::enter`] let run is over (done or failed).
    fn leave(&self);
}

/// How a `FileMemory` has its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// The only writer: it may commit, checkpoint and repair.
    Exclusive,
    /// A reader beside the writer: it never writes the files.
    Shared,
}

/// A [`Memory`] on a file with an atomic commit per request (see the module's docs).
#[derive(Clone)]
pub struct FileMemory {
    state: Rc<RefCell<State>>,
}

struct State {
    data: Box<dyn DiskFile>,
    /// The log's two files: generation `g` lives in `logs[g % 2]`.
    logs: [Box<dyn DiskFile>; 2],
    /// The data file's length, in bytes (the memory may be longer: its growth is in the log
    /// until a checkpoint).
    file_bytes: u64,
    /// The memory's size as committed, in bytes.
    committed_bytes: u64,
    /// The memory's size with this request's growth, in bytes.
    size_bytes: u64,
    max_pages: u64,
    /// This request's changed blocks, by block number.
    dirty: BTreeMap<u64, Box<[u8; BLOCK_BYTES]>>,
    /// The blocks the log holds (the latest of each), laid over the file's.
    logged: BTreeMap<u64, Box<[u8; BLOCK_BYTES]>>,
    /// The log's current generation.
    generation: u64,
    /// The layout of its records: the current one, unless the generation was started by an
    /// earlier release (it is continued in its own format until the next checkpoint).
    format: log::Format,
    /// Where the next record goes in the current generation's file; 0 while the generation's
    /// header is not written yet.
    log_end: u64,
    /// The checksum the next record chains from.
    chain: u64,
    checkpoint_bytes: u64,
    /// Committed bytes read in this open, by [`READ_UNIT_BYTES`] unit: a request reads each
    /// unit of the file once (a host call per read is most of a small request's time).
    /// (A B-tree map: a lookup here is a few comparisons, where the default hash of a
    /// `HashMap` is most of a small read's instructions on the edge, docs/edge.md.)
    clean: BTreeMap<u64, Box<[u8]>>,
    /// The directory of the files, where their names live (none on a simulated disk).
    directory: Option<PathBuf>,
    /// Whether the directory must be synced before the next commit is relied on: the memory
    /// is new, and the names of its file and its log may not be durable yet.
    new_names: bool,
    /// Per log file, whether it was empty at open: its name is made durable before a
    /// generation starts in it.
    log_was_empty: [bool; 2],
    access: Access,
    /// Asked before every checkpoint, if set.
    gate: Option<Rc<dyn CheckpointGate>>,
    io: IoCounters,
}

impl FileMemory {
    /// Opens (or creates) the memory in the file at `path`, its log in `path` + `-journal`
    /// and `path` + `-journal2`. A commit that an earlier format's journal left half applied
    /// is completed first. The caller must hold exclusive access (the module's docs).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let memory = writer(Self::open_files(path, Access::Exclusive)?)?;
        {
            let mut state = memory.state.borrow_mut();
            let directory = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty());
            state.directory = directory.map(Path::to_path_buf);
            // A memory with nothing committed may have just created its files.
            state.new_names = state.committed_bytes == 0 && state.directory.is_some();
        }
        Ok(memory)
    }

    /// Opens the memory in the file at `path` to read it beside its writer (the module's
    /// "Exclusive access, and readers beside it"): it never writes the files, and its
    /// [`FileMemory::commit`] of a change fails. `None` when the files need their writer
    /// first (a commit of an earlier format's journal to complete).
    pub fn open_shared(path: &Path) -> Result<Option<Self>, StoreError> {
        Self::open_files(path, Access::Shared)
    }

    fn open_files(path: &Path, access: Access) -> Result<Option<Self>, StoreError> {
        Self::with_files_as(
            open_file(path)?,
            [
                open_file(&sibling(path, "-journal"))?,
                open_file(&sibling(path, "-journal2"))?,
            ],
            access,
        )
    }

    /// Opens the memory on `data` with its log in `logs` (any [`DiskFile`]s: real files or
    /// the simulated disk of [`sim`]), laying the log's valid records over the file.
    pub fn with_files(
        data: Box<dyn DiskFile>,
        logs: [Box<dyn DiskFile>; 2],
    ) -> Result<Self, StoreError> {
        writer(Self::with_files_as(data, logs, Access::Exclusive)?)
    }

    /// [`FileMemory::open_shared`] on any [`DiskFile`]s.
    pub fn with_files_shared(
        data: Box<dyn DiskFile>,
        logs: [Box<dyn DiskFile>; 2],
    ) -> Result<Option<Self>, StoreError> {
        Self::with_files_as(data, logs, Access::Shared)
    }

    fn with_files_as(
        data: Box<dyn DiskFile>,
        logs: [Box<dyn DiskFile>; 2],
        access: Access,
    ) -> Result<Option<Self>, StoreError> {
        let file_bytes = data
            .byte_len()
            .map_err(io_error("reading the file's length"))?;
        let mut state = State {
            data,
            logs,
            file_bytes,
            committed_bytes: file_bytes,
            size_bytes: file_bytes,
            max_pages: DEFAULT_MAX_PAGES,
            dirty: BTreeMap::new(),
            logged: BTreeMap::new(),
            generation: 0,
            format: log::Format::V2,
            log_end: 0,
            chain: 0,
            checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES,
            clean: BTreeMap::new(),
            directory: None,
            new_names: false,
            log_was_empty: [false; 2],
            access,
            gate: None,
            io: IoCounters::default(),
        };
        if state.read_log()? == LogRead::NeedsWriter {
            return Ok(None);
        }
        if !state.committed_bytes.is_multiple_of(WASM_PAGE_BYTES) {
            return Err(StoreError::storage(
                "opening a file memory",
                format!(
                    "{} bytes is not a whole number of 64 KiB pages",
                    state.committed_bytes
                ),
            ));
        }
        Ok(Some(Self {
            state: Rc::new(RefCell::new(state)),
        }))
    }

    /// Asks `gate` before every checkpoint (the module's "Exclusive access, and readers
    /// beside it").
    pub fn with_checkpoint_gate(self, gate: Rc<dyn CheckpointGate>) -> Self {
        self.state.borrow_mut().gate = Some(gate);
        self
    }

    /// Limits growth to `max_pages` Wasm pages (64 KiB each): [`Memory::grow`] past it fails,
    /// as stable memory does at its limit.
    pub fn with_max_pages(self, max_pages: u64) -> Self {
        self.state.borrow_mut().max_pages = max_pages;
        self
    }

    /// Lets the log grow to `bytes` before a commit checkpoints it (at least one record is
    /// always logged first): fewer syncs per commit for a longer log to read at every open.
    pub fn with_checkpoint_bytes(self, bytes: u64) -> Self {
        self.state.borrow_mut().checkpoint_bytes = bytes;
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

/// How an open's read of the log ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LogRead {
    /// The log's records are laid over the file.
    Done,
    /// An earlier format's journal waits for the writer to complete it.
    NeedsWriter,
}

impl State {
    /// Completes a commit that the earlier format's redo journal (in the first log file)
    /// holds: applies it to the file, syncs the file, and empties the journal; empties a torn
    /// one.
    fn complete_earlier_journal(&mut self, length: u64) -> Result<(), StoreError> {
        let bytes = self.read_whole(0, length, "the earlier journal")?;
        if let journal::Found::Complete(found) = journal::decode(&bytes) {
            // The file's length may be anything between the old and the new one: set it.
            self.data
                .set_len(found.size_bytes)
                .map_err(io_error("sizing the file"))?;
            self.write_blocks(found.blocks.iter().map(|(no, data)| (*no, &**data)))?;
            self.sync_data()?;
            self.file_bytes = found.size_bytes;
            self.committed_bytes = found.size_bytes;
            self.size_bytes = found.size_bytes;
        }
        // Complete and applied (the file synced), or torn (never a commit): either way done.
        // Not synced: a journal found again after a crash is replayed again, harmlessly.
        self.logs[0]
            .set_len(0)
            .map_err(io_error("emptying the earlier journal"))
    }

    /// Finds the current generation of the log (the higher valid header of the two files)
    /// and lays its valid records over the file. A shared open leaves an earlier format's
    /// journal to the writer ([`LogRead::NeedsWriter`]).
    fn read_log(&mut self) -> Result<LogRead, StoreError> {
        let mut current: Option<(usize, log::Header, u64)> = None;
        for index in 0..2 {
            let length = self.logs[index]
                .byte_len()
                .map_err(io_error("reading the log's length"))?;
            self.log_was_empty[index] = length == 0;
            if length < log::HEADER_BYTES as u64 {
                continue;
            }
            let mut bytes = [0u8; log::HEADER_BYTES];
            self.logs[index]
                .read_at(0, &mut bytes)
                .map_err(io_error("reading the log's header"))?;
            self.io.reads += 1;
            self.io.bytes_read += bytes.len() as u64;
            if index == 0 && journal::is_journal(&bytes) {
                if self.access == Access::Shared {
                    return Ok(LogRead::NeedsWriter);
                }
                self.complete_earlier_journal(length)?;
                continue;
            }
            let Some(header) = log::read_header(&bytes) else {
                continue;
            };
            // A header in the wrong file is not one this memory wrote.
            let in_its_file = header.generation % 2 == index as u64;
            if in_its_file && current.is_none_or(|(_, best, _)| header.generation > best.generation)
            {
                current = Some((index, header, length));
            }
        }
        let Some((index, header, length)) = current else {
            // No log yet (or none that a commit relied on): the next commit starts one.
            return Ok(LogRead::Done);
        };
        let bytes = self.read_whole(index, length, "the log")?;
        let scan = log::scan(&bytes, header);
        self.generation = header.generation;
        self.format = header.format;
        self.log_end = scan.end;
        self.chain = scan.checksum;
        for record in scan.records {
            self.committed_bytes = record.size_bytes;
            self.logged.extend(record.blocks);
        }
        self.size_bytes = self.committed_bytes;
        Ok(LogRead::Done)
    }

    /// The first `length` bytes (all of them) of log file `index`.
    fn read_whole(&mut self, index: usize, length: u64, what: &str) -> Result<Vec<u8>, StoreError> {
        let reading =
            |error: std::io::Error| StoreError::storage(&format!("reading {what}"), error);
        let length = usize::try_from(length).map_err(|_| {
            StoreError::storage(
                &format!("reading {what}"),
                "longer than this host can address",
            )
        })?;
        let mut bytes = vec![0; length];
        self.logs[index].read_at(0, &mut bytes).map_err(reading)?;
        self.io.reads += 1;
        self.io.bytes_read += length as u64;
        Ok(bytes)
    }

    fn commit(&mut self) -> Result<CommitReport, StoreError> {
        if self.dirty.is_empty() && self.size_bytes == self.committed_bytes {
            return Ok(CommitReport::default());
        }
        if self.access == Access::Shared {
            return Err(StoreError::storage(
                "committing to a file memory",
                "it was opened to read beside its writer",
            ));
        }
        let blocks = std::mem::take(&mut self.dirty);
        let size_bytes = self.size_bytes;
        let syncs_before = self.io.syncs;
        if let Err(error) = self.append(size_bytes, &blocks) {
            // What the log holds is decided at the next open (the record was synced or it was
            // not); this request's writes are gone either way.
            self.size_bytes = self.committed_bytes;
            return Err(error);
        }
        let committed_blocks = blocks.len() as u64;
        self.committed_bytes = size_bytes;
        self.logged.extend(blocks);
        // The commit is durable: a failed checkpoint leaves the log as it is, and the next
        // commit tries again (the module's docs, "Errors").
        let checkpointed = self.log_end >= self.checkpoint_bytes && self.gated_checkpoint();
        Ok(CommitReport {
            blocks: committed_blocks,
            syncs: self.io.syncs - syncs_before,
            checkpointed,
        })
    }

    /// Appends a record of the commit to the current generation's file and syncs it: the
    /// commit point. Starts the generation's file first if its header is not written yet.
    fn append(
        &mut self,
        size_bytes: u64,
        blocks: &BTreeMap<u64, Box<[u8; BLOCK_BYTES]>>,
    ) -> Result<(), StoreError> {
        if self.new_names {
            // The names of a new memory's files must survive a power cut before a commit is
            // relied on; synced first, so that a failure here leaves nothing committed.
            self.sync_directory()?;
        }
        if self.log_end == 0 {
            self.start_generation(self.generation)?;
        }
        let index = (self.generation % 2) as usize;
        let (record, checksum) = log::encode_record(
            self.chain,
            self.format,
            self.generation,
            size_bytes,
            blocks.iter().map(|(no, data)| (*no, &**data)),
        );
        self.logs[index]
            .write_at(self.log_end, &record)
            .map_err(io_error("appending to the log"))?;
        self.count_write(record.len());
        self.logs[index]
            .sync()
            .map_err(io_error("syncing the log"))?;
        self.io.syncs += 1;
        self.log_end += record.len() as u64;
        self.chain = checksum;
        Ok(())
    }

    /// Empties generation `generation`'s file and writes its header, unsynced: the first
    /// record's sync makes both durable. Until then a power cut may leave the file empty, torn
    /// or as it was, all of which open as a generation older than the current one (or none).
    fn start_generation(&mut self, generation: u64) -> Result<(), StoreError> {
        let index = (generation % 2) as usize;
        if self.log_was_empty[index] && self.directory.is_some() {
            // The file was created by this open or one since the last directory sync: its
            // name must survive a power cut before its records are relied on.
            self.sync_directory()?;
        }
        let (header, found) = log::header(generation);
        self.logs[index]
            .set_len(0)
            .map_err(io_error("emptying the log"))?;
        self.logs[index]
            .write_at(0, &header)
            .map_err(io_error("starting the log"))?;
        self.count_write(header.len());
        self.generation = generation;
        self.format = found.format;
        self.log_end = log::HEADER_BYTES as u64;
        self.chain = found.checksum;
        Ok(())
    }

    /// Checkpoints if the gate lets it: whether it did.
    fn gated_checkpoint(&mut self) -> bool {
        let gate = self.gate.clone();
        if gate.as_ref().is_some_and(|gate| !gate.enter()) {
            return false;
        }
        let done = self.checkpoint().is_ok();
        if let Some(gate) = gate {
            gate.leave();
        }
        done
    }

    /// Copies the log's blocks into the file, syncs it, and starts the next generation in
    /// the other log file: the file then holds every commit, and the log starts empty.
    fn checkpoint(&mut self) -> Result<(), StoreError> {
        if self.committed_bytes > self.file_bytes {
            self.data
                .set_len(self.committed_bytes)
                .map_err(io_error("sizing the file"))?;
        }
        let logged = std::mem::take(&mut self.logged);
        let written = self.write_blocks(logged.iter().map(|(no, data)| (*no, &**data)));
        // The file changed under the cached units.
        self.clean.clear();
        if let Err(error) = written.and_then(|()| self.sync_data()) {
            self.logged = logged;
            return Err(error);
        }
        self.file_bytes = self.file_bytes.max(self.committed_bytes);
        // Only now, with the file durable, may the current generation be superseded.
        let next = self.generation + 1;
        if let Err(error) = self.start_generation(next) {
            // Whether the next generation's header was written or not, the current one
            // replays what the file already holds. The next commit starts the next
            // generation again, never the current one over its own file.
            self.generation = next;
            self.log_end = 0;
            return Err(error);
        }
        Ok(())
    }

    /// Writes `blocks` into the data file, consecutive ones in one write; unsynced.
    fn write_blocks<'a>(
        &mut self,
        blocks: impl Iterator<Item = (u64, &'a [u8; BLOCK_BYTES])>,
    ) -> Result<(), StoreError> {
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        for (block, data) in blocks {
            let offset = block * BLOCK_BYTES as u64;
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
        Ok(())
    }

    fn write_run(&mut self, offset: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.data
            .write_at(offset, bytes)
            .map_err(io_error("writing the file"))?;
        self.count_write(bytes.len());
        Ok(())
    }

    fn sync_data(&mut self) -> Result<(), StoreError> {
        self.data.sync().map_err(io_error("syncing the file"))?;
        self.io.syncs += 1;
        Ok(())
    }

    /// Syncs the directory: the names of every file opened, which an open creates if missing,
    /// are durable from then on.
    fn sync_directory(&mut self) -> Result<(), StoreError> {
        if let Some(directory) = &self.directory {
            sync_directory(directory)?;
            self.io.syncs += 1;
        }
        self.new_names = false;
        self.log_was_empty = [false; 2];
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

    /// The block this request or the log holds, over the file's.
    fn overlay(&self, block: u64) -> Option<&[u8; BLOCK_BYTES]> {
        self.dirty
            .get(&block)
            .or_else(|| self.logged.get(&block))
            .map(|data| &**data)
    }

    fn read(&mut self, offset: u64, dst: &mut [u8]) {
        self.check_bounds(offset, dst.len(), "read");
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done as u64;
            let block = at / BLOCK_BYTES as u64;
            let within = (at % BLOCK_BYTES as u64) as usize;
            if let Some(data) = self.overlay(block) {
                let count = (BLOCK_BYTES - within).min(dst.len() - done);
                dst[done..done + count].copy_from_slice(&data[within..within + count]);
                done += count;
                continue;
            }
            // A run of blocks only the file holds, read in one call.
            let mut end = (block + 1) * BLOCK_BYTES as u64;
            while end < offset + dst.len() as u64
                && self.overlay(end / BLOCK_BYTES as u64).is_none()
            {
                end += BLOCK_BYTES as u64;
            }
            let count = ((end - at) as usize).min(dst.len() - done);
            self.read_file(at, &mut dst[done..done + count]);
            done += count;
        }
    }

    /// Reads the file's bytes through the cache of units; past the committed memory (grown in
    /// this request), zeros.
    fn read_file(&mut self, offset: u64, dst: &mut [u8]) {
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done as u64;
            if at >= self.committed_bytes {
                dst[done..].fill(0);
                return;
            }
            let unit = at / READ_UNIT_BYTES;
            if !self.clean.contains_key(&unit) {
                // The units this read needs that are not cached yet, read in one call.
                let last =
                    (offset + dst.len() as u64 - 1).min(self.committed_bytes - 1) / READ_UNIT_BYTES;
                let mut end = unit + 1;
                while end <= last && !self.clean.contains_key(&end) {
                    end += 1;
                }
                self.load_units(unit, end);
            }
            let within = (at % READ_UNIT_BYTES) as usize;
            let data = &self.clean[&unit];
            let count = (data.len() - within).min(dst.len() - done);
            dst[done..done + count].copy_from_slice(&data[within..within + count]);
            done += count;
        }
    }

    /// Reads the file's units `first..end` in one call (zeros past its end, where the memory
    /// grew in the log) into the cache, at their first use in this open.
    fn load_units(&mut self, first: u64, end: u64) {
        if self.clean.len() + (end - first) as usize > MAX_CACHED_UNITS {
            self.clean.clear();
        }
        let start = first * READ_UNIT_BYTES;
        let length = (self.committed_bytes.min(end * READ_UNIT_BYTES) - start) as usize;
        let data = match self.data.read_owned(start, length) {
            Ok(data) => data,
            Err(error) => panic!("reading {length} bytes at {start} of a file memory: {error}"),
        };
        self.io.reads += 1;
        self.io.bytes_read += length as u64;
        if end - first == 1 {
            // The common case, kept as the host wrote it.
            self.clean.insert(first, data);
            return;
        }
        for (index, unit) in data.chunks(READ_UNIT_BYTES as usize).enumerate() {
            self.clean.insert(first + index as u64, unit.into());
        }
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
                    match self.logged.get(&block) {
                        Some(logged) => data.copy_from_slice(&**logged),
                        None => self.read_file(block * BLOCK_BYTES as u64, &mut data[..]),
                    }
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

/// The memory an exclusive open made: it completes an earlier journal itself, so it is never
/// `None`.
fn writer(opened: Option<FileMemory>) -> Result<FileMemory, StoreError> {
    opened.ok_or_else(|| {
        StoreError::storage(
            "opening a file memory",
            "its earlier journal was not completed",
        )
    })
}

/// `path` with `suffix` appended to its name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
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

/// Makes the names of new files in `directory` durable: a directory entry is data of the
/// directory, which a sync of the file does not cover. Hosts that cannot open a directory for
/// syncing (some WASI hosts answer "unsupported") are told apart from real failures.
fn sync_directory(directory: &Path) -> Result<(), StoreError> {
    match File::open(directory).and_then(|directory| directory.sync_all()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::Unsupported => Ok(()),
        Err(error) => Err(StoreError::storage("syncing the data directory", error)),
    }
}

fn io_error(context: &'static str) -> impl Fn(std::io::Error) -> StoreError {
    move |error| StoreError::storage(context, error)
}
