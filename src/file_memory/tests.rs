//! FileMemory against its two promises: after a crash at any operation the memory holds
//! the last acknowledged commit or the one in flight, never a mix; a commit that returned
//! `Ok` survives a power cut. Then the page tree and the B-tree on it, through crashes.

use super::sim::{SimDisk, XorShift};
use super::{CheckpointGate, DiskFile, FileMemory, BLOCK_BYTES, WASM_PAGE_BYTES};
use crate::{BTreeStore, PageTreeStore, PerRequestPageTree, User, UserStore};
use ic_stable_structures::Memory;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The memory's files on `disk`, as `FileMemory::open` names them.
fn files(disk: &SimDisk) -> (Box<dyn DiskFile>, [Box<dyn DiskFile>; 2]) {
    (
        Box::new(disk.open("data")),
        [
            Box::new(disk.open("data-journal")),
            Box::new(disk.open("data-journal2")),
        ],
    )
}

fn try_open(disk: &SimDisk) -> Result<FileMemory, crate::StoreError> {
    let (data, logs) = files(disk);
    FileMemory::with_files(data, logs)
}

fn open_on(disk: &SimDisk) -> FileMemory {
    try_open(disk).expect("a file memory opens on the simulated disk")
}

fn image(memory: &FileMemory) -> Vec<u8> {
    let mut bytes = vec![0; (memory.size() * WASM_PAGE_BYTES) as usize];
    memory.read(0, &mut bytes);
    bytes
}

/// One request's changes: a growth, then writes at random places, some across blocks.
fn request(memory: &FileMemory, random: &mut XorShift) {
    if memory.size() == 0 || random.next_u64().is_multiple_of(4) {
        assert!(memory.grow(1 + random.next_u64() % 2) >= 0);
    }
    let size = memory.size() * WASM_PAGE_BYTES;
    for _ in 0..1 + random.next_u64() % 6 {
        let len = 1 + (random.next_u64() % (2 * BLOCK_BYTES as u64)) as usize;
        let offset = random.next_u64() % (size - len as u64);
        let fill = (random.next_u64() % 251) as u8 + 1;
        memory.write(offset, &vec![fill; len]);
    }
}

#[test]
fn writes_are_read_back_before_and_after_a_commit_and_a_reopen() {
    let disk = SimDisk::new();
    let memory = open_on(&disk);
    assert_eq!(memory.grow(2), 0);
    memory.write(BLOCK_BYTES as u64 - 3, b"across a block");
    let mut read = [0u8; 14];
    memory.read(BLOCK_BYTES as u64 - 3, &mut read);
    assert_eq!(&read, b"across a block");
    let report = memory.commit().expect("commit");
    assert_eq!((report.blocks, report.syncs), (2, 1));
    assert_eq!(memory.commit().expect("empty commit").syncs, 0);

    let reopened = open_on(&disk);
    assert_eq!(reopened.size(), 2);
    let mut again = [0u8; 14];
    reopened.read(BLOCK_BYTES as u64 - 3, &mut again);
    assert_eq!(&again, b"across a block");
}

#[test]
fn a_rollback_and_an_uncommitted_request_leave_the_file_as_it_was() {
    let disk = SimDisk::new();
    let memory = open_on(&disk);
    memory.grow(1);
    memory.write(0, b"kept");
    memory.commit().expect("commit");
    memory.grow(3);
    memory.write(10, b"dropped");
    memory.rollback();
    assert_eq!(memory.size(), 1);
    assert!(!memory.has_changes());
    memory.write(100, b"never committed");
    disk.kill();
    let reopened = open_on(&disk);
    let mut bytes = vec![0u8; 120];
    reopened.read(0, &mut bytes);
    assert_eq!(&bytes[..4], b"kept");
    assert!(bytes[4..].iter().all(|byte| *byte == 0));
}

#[test]
fn growth_past_the_limit_fails_and_changes_nothing() {
    let disk = SimDisk::new();
    let memory = open_on(&disk).with_max_pages(3);
    assert_eq!(memory.grow(2), 0);
    assert_eq!(memory.grow(2), -1);
    assert_eq!(memory.size(), 2);
}

#[test]
#[should_panic(expected = "out of bounds")]
fn a_read_past_the_end_panics_as_stable_memory_traps() {
    let memory = open_on(&SimDisk::new());
    memory.grow(1);
    memory.read(WASM_PAGE_BYTES - 2, &mut [0u8; 4]);
}

#[test]
fn a_file_that_is_not_whole_pages_is_refused() {
    let disk = SimDisk::new();
    disk.open("data")
        .write_at(0, b"not a memory")
        .expect("write");
    assert!(matches!(
        try_open(&disk),
        Err(crate::StoreError::Storage { .. })
    ));
}

/// How a crash ends the process.
#[derive(Clone, Copy, Debug)]
enum Crash {
    Kill,
    PowerCut(u64),
}

impl Crash {
    fn strike(self, disk: &SimDisk) {
        match self {
            Crash::Kill => disk.kill(),
            Crash::PowerCut(seed) => disk.power_cut(seed),
        }
    }
}

/// How a crash test's requests meet the memory.
#[derive(Clone, Copy, Debug)]
struct Run {
    seed: u64,
    requests: usize,
    /// The memory's checkpoint threshold: 0 checkpoints at every commit, `u64::MAX` never.
    checkpoint_bytes: u64,
    /// Whether every request opens the memory afresh, as on an edge host, rather than one
    /// open serving them all.
    open_per_request: bool,
}

impl Run {
    fn open(&self, disk: &SimDisk) -> Result<FileMemory, crate::StoreError> {
        try_open(disk).map(|memory| memory.with_checkpoint_bytes(self.checkpoint_bytes))
    }

    /// The mutating operations of the run without a crash: every crash point is below it.
    fn operations(&self) -> u64 {
        let disk = SimDisk::new();
        let mut random = XorShift::new(self.seed);
        let mut memory = self.open(&disk).expect("opens");
        for _ in 0..self.requests {
            if self.open_per_request {
                memory = self.open(&disk).expect("opens");
            }
            request(&memory, &mut random);
            memory.commit().expect("a clean commit");
        }
        disk.operations()
    }
}

/// What a crashed run left.
struct Crashed {
    /// The memory's image after each acknowledged commit (the first: empty).
    images: Vec<Vec<u8>>,
    /// The image of the commit in flight at the crash, if one was.
    in_flight: Option<Vec<u8>>,
    /// The memory's image after the final recovery.
    recovered: Vec<u8>,
}

/// Runs `run`'s requests with the disk failing from operation `crash_at` on; then crashes,
/// and again during recovery at `recovery_crash_at` if given.
fn crash_once(run: Run, crash_at: u64, crash: Crash, recovery_crash_at: Option<u64>) -> Crashed {
    let disk = SimDisk::new();
    let mut random = XorShift::new(run.seed);
    let mut images = vec![Vec::new()];
    let mut in_flight = None;
    disk.fail_after(crash_at);
    let mut memory = run.open(&disk).ok();
    for _ in 0..run.requests {
        if run.open_per_request {
            memory = run.open(&disk).ok();
        }
        let Some(memory) = &memory else {
            break;
        };
        request(memory, &mut random);
        let image = image(memory);
        match memory.commit() {
            // Acknowledged: durable, even if a checkpoint after it failed.
            Ok(_) => images.push(image),
            Err(_) => {
                in_flight = Some(image);
                break;
            }
        }
    }
    crash.strike(&disk);
    if let Some(point) = recovery_crash_at {
        disk.fail_after(point);
        if try_open(&disk).is_err() {
            crash.strike(&disk);
        }
        disk.kill();
    }
    let recovered = image(&open_on(&disk));
    Crashed {
        images,
        in_flight,
        recovered,
    }
}

/// Every crash point of runs of requests, killed and power-cut with several seeds, with and
/// without a second crash during recovery: with a checkpoint at every commit, every few and
/// never, one open for all requests and one per request.
#[test]
fn a_crash_at_any_operation_leaves_the_last_acknowledged_commit_or_the_one_in_flight() {
    let mut crash_points = 0;
    let mut in_flight_kept = 0;
    let mut checkpointed_runs = 0;
    for seed in 0..3u64 {
        for checkpoint_bytes in [0, 6 * BLOCK_BYTES as u64, u64::MAX] {
            for open_per_request in [false, true] {
                let run = Run {
                    seed,
                    requests: 6,
                    checkpoint_bytes,
                    open_per_request,
                };
                let operations = run.operations();
                checkpointed_runs += usize::from(checkpoint_bytes != u64::MAX);
                for crash_at in 0..operations {
                    let power_cut =
                        Crash::PowerCut(seed * 100_000 + checkpoint_bytes % 1_000 + crash_at);
                    for (variant, crash) in [Crash::Kill, power_cut].into_iter().enumerate() {
                        let recovery_crash =
                            (variant == 1 && crash_at % 3 == 0).then_some(crash_at % 4);
                        let crashed = crash_once(run, crash_at, crash, recovery_crash);
                        crash_points += 1;
                        let last = crashed.images.last().expect("the empty memory");
                        let kept_in_flight = crashed.in_flight.as_ref() == Some(&crashed.recovered);
                        assert!(
                            crashed.recovered == *last || kept_in_flight,
                            "{run:?}, {crash:?} at operation {crash_at} (recovery crash \
                             {recovery_crash:?}): the memory is neither commit {} nor the one \
                             in flight",
                            crashed.images.len() - 1
                        );
                        in_flight_kept += usize::from(kept_in_flight && crashed.recovered != *last);
                    }
                }
            }
        }
    }
    println!("{crash_points} crash points, the in-flight commit kept at {in_flight_kept}");
    // Both outcomes occur: a crash after the log's sync keeps the commit, one before loses
    // it. A test where one never happens is not testing the commit point.
    assert!(in_flight_kept > 0 && in_flight_kept < crash_points);
    assert!(checkpointed_runs > 0);
}

/// A commit syncs the log once; the commit that passes the threshold syncs the file too and
/// moves the log to its other file; the memory reads the same before and after, and reopened.
#[test]
fn a_commit_syncs_once_and_a_checkpoint_once_more() {
    let disk = SimDisk::new();
    let memory = open_on(&disk).with_checkpoint_bytes(3 * BLOCK_BYTES as u64);
    memory.grow(1);
    let contents = |name: &str| {
        let file = disk.open(name);
        let mut bytes = vec![0u8; file.byte_len().expect("length") as usize];
        file.read_at(0, &mut bytes).expect("read");
        bytes
    };
    let mut reports = Vec::new();
    let mut previous_generation = Vec::new();
    for round in 0..6u8 {
        memory.write(u64::from(round) * BLOCK_BYTES as u64, &[round + 1; 10]);
        reports.push(memory.commit().expect("commit"));
        // The generation a checkpoint superseded is never written over while the next one
        // fills (the log's docs, "Why two files").
        match round {
            2 => previous_generation = contents("data-journal"),
            3 | 4 => assert!(
                contents("data-journal") == previous_generation,
                "the superseded generation's file changed at round {round}"
            ),
            _ => {}
        }
    }
    let syncs: Vec<u64> = reports.iter().map(|report| report.syncs).collect();
    let checkpoints: Vec<bool> = reports.iter().map(|report| report.checkpointed).collect();
    // A record of one block is 4,136 bytes after the 32-byte header: the third passes
    // 12,288 bytes, and the log starts again in the other file.
    assert_eq!(syncs, [1, 1, 2, 1, 1, 2]);
    assert_eq!(checkpoints, [false, false, true, false, false, true]);
    let generation_of = |name: &str| {
        let mut header = [0u8; 32];
        disk.open(name).read_at(0, &mut header).expect("read");
        super::log::read_header(&header).map(|header| header.generation)
    };
    assert_eq!(generation_of("data-journal2"), Some(1));
    assert_eq!(generation_of("data-journal"), Some(2));
    let expected = image(&memory);
    disk.power_cut(11);
    let reopened = open_on(&disk);
    assert_eq!(image(&reopened), expected);
    for round in 0..6u8 {
        let mut byte = [0u8; 1];
        reopened.read(u64::from(round) * BLOCK_BYTES as u64, &mut byte);
        assert_eq!(byte[0], round + 1);
    }
}

/// A read-only request on an edge host opens the memory and reads: it writes nothing, and
/// an open reads the log's headers and its current generation.
#[test]
fn an_open_and_a_read_write_nothing() {
    let disk = SimDisk::new();
    let memory = open_on(&disk);
    memory.grow(1);
    memory.write(0, b"row");
    memory.commit().expect("commit");
    let before = disk.operations();
    let reopened = open_on(&disk);
    let mut read = [0u8; 3];
    reopened.read(0, &mut read);
    assert_eq!(&read, b"row");
    assert_eq!(disk.operations(), before);
    let io = reopened.io();
    assert_eq!((io.writes, io.syncs), (0, 0));
    // The first log file's header, then its records (the second file is empty: not read);
    // the row is in the log, so the data file is not read.
    assert_eq!(io.reads, 2, "{io:?}");
}

/// A commit the earlier format's redo journal holds (written and synced, not yet applied
/// when the host stopped) is completed at open; a torn one is dropped.
#[test]
fn a_journal_of_the_earlier_format_is_completed_at_open() {
    let disk = SimDisk::new();
    let memory = open_on(&disk);
    memory.grow(1);
    memory.write(0, b"old");
    memory.commit().expect("commit");
    // The log checkpointed into the file, as the earlier format always left it.
    drop(memory);
    let checkpointed = open_on(&disk).with_checkpoint_bytes(0);
    checkpointed.write(0, b"OLD");
    checkpointed.commit().expect("commit");
    for name in ["data-journal", "data-journal2"] {
        disk.open(name).set_len(0).expect("empty");
    }
    let mut block = Box::new([0u8; BLOCK_BYTES]);
    block[..3].copy_from_slice(b"new");
    let journal = super::journal::encode(2 * WASM_PAGE_BYTES, [(0, &*block)].into_iter());

    let complete = disk.open("data-journal");
    complete.write_at(0, &journal).expect("write");
    // A reader beside the writer leaves the journal to it.
    let (data, logs) = files(&disk);
    let shared = FileMemory::with_files_shared(data, logs).expect("opens");
    assert!(shared.is_none(), "a shared open went on past the journal");
    assert_eq!(
        disk.open("data-journal").byte_len().expect("length"),
        journal.len() as u64,
        "a shared open wrote"
    );
    let reopened = open_on(&disk);
    assert_eq!(reopened.size(), 2);
    let mut read = [0u8; 3];
    reopened.read(0, &mut read);
    assert_eq!(&read, b"new");
    assert_eq!(
        disk.open("data").byte_len().expect("length"),
        2 * WASM_PAGE_BYTES
    );
    assert_eq!(disk.open("data-journal").byte_len().expect("length"), 0);

    let torn = disk.open("data-journal");
    torn.write_at(0, &journal[..journal.len() - 1])
        .expect("write");
    let reopened = open_on(&disk);
    let mut read = [0u8; 3];
    reopened.read(0, &mut read);
    assert_eq!(&read, b"new", "the torn journal changed nothing");
    assert_eq!(disk.open("data-journal").byte_len().expect("length"), 0);
}

#[test]
fn a_read_of_units_not_read_yet_is_one_call_and_each_unit_is_read_once() {
    let disk = SimDisk::new();
    let writer = open_on(&disk).with_checkpoint_bytes(0);
    writer.grow(1);
    writer.write(0, &[7; WASM_PAGE_BYTES as usize]);
    assert!(
        writer.commit().expect("commit").checkpointed,
        "the file holds the page"
    );
    let memory = open_on(&disk);
    let calls = |memory: &FileMemory| (memory.io().reads, memory.io().bytes_read);
    let opened = calls(&memory);
    // Blocks 1 to 4, none read yet: one call.
    let mut bytes = vec![0; 3 * BLOCK_BYTES];
    memory.read(BLOCK_BYTES as u64 + 5, &mut bytes);
    assert!(bytes.iter().all(|byte| *byte == 7));
    let block = BLOCK_BYTES as u64;
    assert_eq!(calls(&memory), (opened.0 + 1, opened.1 + 4 * block));
    // Blocks 0 to 5: only 0 and 5 are read, one call each (they are not consecutive).
    let mut wider = vec![0; 6 * BLOCK_BYTES];
    memory.read(0, &mut wider);
    assert!(wider.iter().all(|byte| *byte == 7));
    assert_eq!(calls(&memory), (opened.0 + 3, opened.1 + 6 * block));
    // All cached: no call.
    memory.read(3 * block, &mut bytes);
    assert_eq!(calls(&memory), (opened.0 + 3, opened.1 + 6 * block));
}

/// A gate that lets a checkpoint run only while `allow` says so, counting its calls.
#[derive(Default)]
struct TestGate {
    allow: Cell<bool>,
    entered: Cell<u32>,
    left: Cell<u32>,
}

impl CheckpointGate for TestGate {
    fn enter(&self) -> bool {
        self.entered.set(self.entered.get() + 1);
        self.allow.get()
    }

    fn leave(&self) {
        self.left.set(self.left.get() + 1);
    }
}

fn open_shared_on(disk: &SimDisk) -> FileMemory {
    let (data, logs) = files(disk);
    FileMemory::with_files_shared(data, logs)
        .expect("opens")
        .expect("needs no writer first")
}

/// The two bytes at `offset`.
fn two(memory: &FileMemory, offset: u64) -> [u8; 2] {
    let mut bytes = [0; 2];
    memory.read(offset, &mut bytes);
    bytes
}

#[test]
fn a_reader_beside_the_writer_sees_its_commit_whole_while_the_gate_holds_checkpoints_off() {
    let (x, y) = (0, WASM_PAGE_BYTES);
    let disk = SimDisk::new();
    let gate = Rc::new(TestGate::default());
    let writer = open_on(&disk)
        .with_checkpoint_bytes(0)
        .with_checkpoint_gate(gate.clone());
    writer.grow(2);
    writer.write(x, b"x0");
    writer.write(y, b"y0");
    assert!(
        !writer.commit().expect("commit").checkpointed,
        "the gate said no"
    );
    assert_eq!((gate.entered.get(), gate.left.get()), (1, 0));
    gate.allow.set(true);
    writer.write(x, b"x1");
    assert!(writer.commit().expect("commit").checkpointed);
    assert_eq!((gate.entered.get(), gate.left.get()), (2, 1));
    gate.allow.set(false);
    writer.write(x, b"x2");
    writer.commit().expect("commit");

    // The reader's commit is x2 (in the log) over y0 (in the file); the writer's next
    // commits append to the log and leave the file alone while the gate says no.
    let reader = open_shared_on(&disk);
    assert_eq!(two(&reader, x), *b"x2");
    writer.write(x, b"x3");
    writer.write(y, b"y3");
    assert!(!writer.commit().expect("commit").checkpointed);
    assert_eq!(
        two(&reader, y),
        *b"y0",
        "the reader saw half of a later commit"
    );
    assert_eq!(two(&reader, x), *b"x2");
    // A reader cannot commit, and its failed commit wrote nothing.
    let before = disk.operations();
    reader.write(x, b"zz");
    assert!(reader.commit().is_err());
    reader.rollback();
    assert_eq!(disk.operations(), before, "a shared memory wrote its files");

    // What the gate prevents: a checkpoint under a reader gives it half of a later commit.
    // The reader's commit is x5 (in the log) over y3 (in the file, checkpointed with x4).
    gate.allow.set(true);
    writer.write(x, b"x4");
    assert!(writer.commit().expect("commit").checkpointed);
    gate.allow.set(false);
    writer.write(x, b"x5");
    assert!(!writer.commit().expect("commit").checkpointed);
    let unlucky = open_shared_on(&disk);
    gate.allow.set(true);
    writer.write(x, b"x6");
    writer.write(y, b"y6");
    assert!(writer.commit().expect("commit").checkpointed);
    assert_eq!(
        (two(&unlucky, x), two(&unlucky, y)),
        (*b"x5", *b"y6"),
        "a checkpoint under a reader"
    );
    let after = open_shared_on(&disk);
    assert_eq!((two(&after, x), two(&after, y)), (*b"x6", *b"y6"));
}

/// A log of the first format (every record checked at open, as the release before wrote it)
/// is read at open, takes more commits in its own format until the next checkpoint, and the
/// next generation is in the current format; a power cut at any point keeps every commit.
#[test]
fn a_log_of_the_first_format_is_read_and_continued_until_its_checkpoint() {
    use super::log::{self, Format};
    let disk = SimDisk::new();
    let memory = open_on(&disk);
    memory.grow(1);
    memory.commit().expect("commit");
    drop(memory);
    // The release before's log: generation 0, one record of "old" in block 0.
    let (header_bytes, header) = log::header_in(Format::V1, 0);
    let mut block = Box::new([0u8; BLOCK_BYTES]);
    block[..3].copy_from_slice(b"old");
    let (record, _) = log::encode_record(
        header.checksum,
        Format::V1,
        0,
        WASM_PAGE_BYTES,
        [(0, &*block)].into_iter(),
    );
    let first = disk.open("data-journal");
    first.set_len(0).expect("empty");
    first.write_at(0, &header_bytes).expect("write");
    first
        .write_at(header_bytes.len() as u64, &record)
        .expect("write");
    disk.open("data-journal2").set_len(0).expect("empty");
    let format_of = |name: &str| {
        let mut bytes = [0u8; log::HEADER_BYTES];
        disk.open(name).read_at(0, &mut bytes).expect("read");
        log::read_header(&bytes).map(|header| (header.generation, header.format))
    };

    let reopened = open_on(&disk).with_checkpoint_bytes(3 * BLOCK_BYTES as u64);
    let mut read = [0u8; 3];
    reopened.read(0, &mut read);
    assert_eq!(&read, b"old");
    reopened.write(BLOCK_BYTES as u64, b"two");
    let report = reopened.commit().expect("commit");
    assert!(!report.checkpointed);
    assert_eq!(format_of("data-journal"), Some((0, Format::V1)));
    disk.power_cut(3);
    let after_cut = open_on(&disk).with_checkpoint_bytes(3 * BLOCK_BYTES as u64);
    let mut read = [0u8; 3];
    after_cut.read(BLOCK_BYTES as u64, &mut read);
    assert_eq!(
        &read, b"two",
        "a format-1 record appended after the earlier release's"
    );
    after_cut.write(2 * BLOCK_BYTES as u64, b"six");
    assert!(after_cut.commit().expect("commit").checkpointed);
    assert_eq!(format_of("data-journal2"), Some((1, Format::V2)));
    after_cut.write(3 * BLOCK_BYTES as u64, b"ten");
    after_cut.commit().expect("commit");
    disk.power_cut(5);
    let last = open_on(&disk);
    for (block, expected) in [(0, b"old"), (1, b"two"), (2, b"six"), (3, b"ten")] {
        let mut read = [0u8; 3];
        last.read(block * BLOCK_BYTES as u64, &mut read);
        assert_eq!(&read, expected, "block {block}");
    }
}

/// A request on an engine: the edge's shape (open, one call, close, commit).
fn insert_request<S: UserStore>(store: &mut S, users: &[User]) -> bool {
    store.insert_batch(users).is_ok()
}

fn users_of(random: &mut XorShift, request: usize) -> Vec<User> {
    let mut ids = BTreeMap::new();
    for _ in 0..1 + random.next_u64() % 300 {
        let id = random.next_u64() % 1_000_000;
        ids.insert(
            id,
            format!("user-{request}-{id}-{}", "x".repeat((id % 90) as usize)),
        );
    }
    ids.into_iter()
        .map(|(id, username)| User { id, username })
        .collect()
}

fn table<S: UserStore>(store: &S) -> Vec<User> {
    let mut rows = Vec::new();
    let mut after = None;
    loop {
        let page = store.page(after, 1_000).expect("a page of the table");
        let last = page.last().map(|user| user.id);
        rows.extend(page);
        match last {
            Some(id) => after = Some(id),
            None => return rows,
        }
    }
}

/// The page tree, the B-tree and the stable-memory SQLite on a file memory, crashed during a
/// request's commit at every tenth operation: the table is the acknowledged requests' or those
/// and the one in flight, it answers `count` and `get` consistently, and it passes the engine's
/// own check where it has one (`check`).
#[test]
fn engines_on_a_file_memory_survive_a_crash_in_any_commit() {
    fn run<S: UserStore>(open: impl Fn(FileMemory) -> S, close: impl Fn(S), check: impl Fn(&S)) {
        const REQUESTS: usize = 8;
        let total = {
            let disk = SimDisk::new();
            let mut random = XorShift::new(7);
            for request in 0..REQUESTS {
                let memory = open_on(&disk);
                let mut store = open(memory.clone());
                let _ = insert_request(&mut store, &users_of(&mut random, request));
                close(store);
                memory.commit().expect("a clean commit");
            }
            disk.operations()
        };
        for crash_at in (0..total).step_by(10) {
            let disk = SimDisk::new();
            let mut random = XorShift::new(7);
            let mut model: BTreeMap<u64, String> = BTreeMap::new();
            let mut in_flight = model.clone();
            disk.fail_after(crash_at);
            for request in 0..REQUESTS {
                let Ok(memory) = try_open(&disk) else {
                    break;
                };
                let mut store = open(memory.clone());
                let users = users_of(&mut random, request);
                let inserted = insert_request(&mut store, &users);
                close(store);
                in_flight = model.clone();
                if inserted {
                    in_flight.extend(users.iter().map(|u| (u.id, u.username.clone())));
                }
                if memory.commit().is_err() {
                    break;
                }
                model = in_flight.clone();
            }
            disk.power_cut(crash_at);
            let store = open(open_on(&disk));
            let rows: BTreeMap<u64, String> = table(&store)
                .into_iter()
                .map(|u| (u.id, u.username))
                .collect();
            assert!(
                rows == model || rows == in_flight,
                "crash at operation {crash_at}: {} rows, acknowledged {}, in flight {}",
                rows.len(),
                model.len(),
                in_flight.len()
            );
            assert_eq!(store.count().expect("count"), rows.len() as u64);
            for (id, username) in rows.iter().take(50) {
                assert_eq!(&store.get(*id).expect("get").username, username);
            }
            check(&store);
        }
    }
    // The page tree and the B-tree have no check of their own beyond what `run` reads.
    fn no_check_of_its_own<S>(_: &S) {}
    run(
        |memory| PerRequestPageTree::open_per_request(memory).expect("the page tree opens"),
        |store| store.close().expect("the page tree closes"),
        no_check_of_its_own,
    );
    run(
        |memory| PageTreeStore::open(memory).expect("the page tree opens"),
        |store| store.close().expect("the page tree closes"),
        no_check_of_its_own,
    );
    run(
        |memory| BTreeStore::open(memory).expect("the B-tree opens"),
        drop,
        no_check_of_its_own,
    );
    #[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
    run(
        |memory| {
            crate::StableSqliteStore::open(
                "crashed.db",
                memory,
                crate::StableSqliteStore::default_config(),
            )
            .expect("the stable-memory SQLite opens")
        },
        |store| store.close().expect("the stable-memory SQLite closes"),
        |store| store.check_integrity().expect("SQLite's integrity check"),
    );
}

/// On real files, opened per request as an edge host does: a new memory's first commit also
/// syncs the directory (its files' names), a later one syncs the log alone, and the first
/// checkpoint into the second log file, empty until then, syncs the directory once more.
#[test]
fn on_real_files_a_commit_syncs_the_log_once_and_new_names_once() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let path = directory.path().join("table");
    let request = |fill: u8, checkpoint_bytes: u64| {
        let memory = FileMemory::open(&path)
            .expect("opens")
            .with_checkpoint_bytes(checkpoint_bytes);
        if memory.size() == 0 {
            memory.grow(1);
        }
        memory.write(0, &[fill; 8]);
        let report = memory.commit().expect("commit");
        (report.syncs, report.checkpointed)
    };
    assert_eq!(request(1, u64::MAX), (2, false), "log and directory");
    assert_eq!(request(2, u64::MAX), (1, false), "the log alone");
    assert_eq!(
        request(3, 0),
        (3, true),
        "log, file, and the second log's name"
    );
    assert_eq!(request(4, 0), (2, true), "log and file");
    let reopened = FileMemory::open(&path).expect("opens");
    let mut read = [0u8; 8];
    reopened.read(0, &mut read);
    assert_eq!(read, [4; 8]);
    assert_eq!(
        std::fs::metadata(&path).expect("the data file").len(),
        WASM_PAGE_BYTES,
        "checkpointed into the file"
    );
}
