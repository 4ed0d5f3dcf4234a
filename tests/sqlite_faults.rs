//! SQLite's allocation and I/O failures, injected natively the way SQLite's own test suite
//! does (`malloc.test`, `ioerr.test`): the Nth allocation, I/O operation or stable-memory grow
//! fails, once or from then on, for N = 1, 2, … until the write runs through without reaching
//! it. Every kind of write (one row, a batch, a batch that fails on a duplicate or an unknown
//! id and must be undone, in the OFF journal by the store's own undo), every journal mode of
//! both SQLite engines.
//!
//! After each write the store is checked against the same write run without faults:
//! - it succeeded: the same answer, and the table is what that run left;
//! - it failed with a clean error (anything but `Storage`): the same error as that run, and
//!   the table exactly as before;
//! - it failed with `Storage`: the message names the injected cause (never "no transaction
//!   is active"). A canister traps on `Storage` and the IC discards the message; natively,
//!   with a journal, SQLite itself must have rolled back: the table is exactly as before.
//!   Without one (`Off`) only the trap makes the write atomic, so the table is not checked.
//!
//! In every case the database then passes `PRAGMA integrity_check`, with the kept row count
//! equal to the table's. The figures are printed (`--nocapture`).
//!
//! Faults are process-wide (SQLite's allocator and default VFS), so the tests of this binary
//! take turns.

use ic_stable_structures::Memory;
use rusqlite::ffi;
use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, Once};
use userstore::{
    JournalMode, SqliteConfig, SqliteStore, StableSqliteStore, StoreError, User, UserStore,
};

/// What fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// `sqlite3_malloc` and `sqlite3_realloc` return null.
    Alloc = 1,
    /// The default VFS's read, write, truncate and sync return an I/O error.
    Io = 2,
    /// The stable memory cannot grow (`Memory::grow` returns -1), as past a canister's limit.
    Grow = 3,
}

/// The armed fault, and how many operations of its kind are left before it fires.
static ARMED: AtomicU8 = AtomicU8::new(0);
static COUNTDOWN: AtomicU64 = AtomicU64::new(0);
static PERSISTENT: AtomicBool = AtomicBool::new(false);
static FIRED: AtomicU64 = AtomicU64::new(0);

/// Tests take turns: the faults are process-wide.
static TURN: Mutex<()> = Mutex::new(());

fn arm(fault: Fault, nth: u64, persistent: bool) {
    FIRED.store(0, Ordering::SeqCst);
    COUNTDOWN.store(nth, Ordering::SeqCst);
    PERSISTENT.store(persistent, Ordering::SeqCst);
    ARMED.store(fault as u8, Ordering::SeqCst);
}

/// Disarms, returning how many failures were injected.
fn disarm() -> u64 {
    ARMED.store(0, Ordering::SeqCst);
    FIRED.load(Ordering::SeqCst)
}

/// Whether this operation of kind `fault` fails.
fn hit(fault: Fault) -> bool {
    if ARMED.load(Ordering::SeqCst) != fault as u8 {
        return false;
    }
    let fails = match COUNTDOWN.load(Ordering::SeqCst) {
        0 => PERSISTENT.load(Ordering::SeqCst),
        1 => {
            COUNTDOWN.store(0, Ordering::SeqCst);
            true
        }
        left => {
            COUNTDOWN.store(left - 1, Ordering::SeqCst);
            false
        }
    };
    if fails {
        FIRED.fetch_add(1, Ordering::SeqCst);
    }
    fails
}

/// SQLite's allocator for this process: the system's, with a size header, failing when
/// [`Fault::Alloc`] says so.
mod allocator {
    use super::*;

    const HEADER: usize = 8;

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(HEADER)?, 8).ok()
    }

    unsafe fn allocate(size: c_int) -> *mut c_void {
        let size = usize::try_from(size).unwrap_or(0);
        let Some(layout) = layout(size) else {
            return std::ptr::null_mut();
        };
        let base = alloc::alloc(layout);
        if base.is_null() {
            return base.cast();
        }
        base.cast::<usize>().write(size);
        base.add(HEADER).cast()
    }

    unsafe extern "C" fn x_malloc(size: c_int) -> *mut c_void {
        if hit(Fault::Alloc) {
            return std::ptr::null_mut();
        }
        allocate(size)
    }

    unsafe extern "C" fn x_free(pointer: *mut c_void) {
        if pointer.is_null() {
            return;
        }
        let base = pointer.cast::<u8>().sub(HEADER);
        let size = base.cast::<usize>().read();
        if let Some(layout) = layout(size) {
            alloc::dealloc(base, layout);
        }
    }

    unsafe extern "C" fn x_realloc(pointer: *mut c_void, size: c_int) -> *mut c_void {
        if hit(Fault::Alloc) {
            return std::ptr::null_mut();
        }
        let moved = allocate(size);
        if !moved.is_null() && !pointer.is_null() {
            let keep = x_size(pointer).min(size).max(0) as usize;
            std::ptr::copy_nonoverlapping(pointer.cast::<u8>(), moved.cast::<u8>(), keep);
            x_free(pointer);
        }
        moved
    }

    unsafe extern "C" fn x_size(pointer: *mut c_void) -> c_int {
        if pointer.is_null() {
            return 0;
        }
        let size = pointer.cast::<u8>().sub(HEADER).cast::<usize>().read();
        c_int::try_from(size).unwrap_or(c_int::MAX)
    }

    unsafe extern "C" fn x_roundup(size: c_int) -> c_int {
        (size + 7) & !7
    }

    unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }

    unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

    /// Installs the allocator; SQLite must not have initialized yet.
    pub fn install() {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLite copies the methods; every one is defined above.
        let code = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods) };
        assert_eq!(
            code,
            ffi::SQLITE_OK,
            "SQLite initialized before the allocator"
        );
    }
}

/// The default VFS, wrapped so that reads, writes, truncations and syncs fail when
/// [`Fault::Io`] says so: every file SQLite opens (database, journal, WAL) gets a copy of its
/// I/O methods with those four replaced.
mod io_vfs {
    use super::*;

    /// The real VFS, and each real method table with the copy that replaces it.
    static REAL_VFS: AtomicU64 = AtomicU64::new(0);
    static METHODS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

    fn real_vfs() -> *mut ffi::sqlite3_vfs {
        REAL_VFS.load(Ordering::SeqCst) as *mut ffi::sqlite3_vfs
    }

    /// The real methods behind `file`'s replaced ones.
    unsafe fn real(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
        let wrapped = (*file).pMethods as usize;
        let methods = METHODS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (real, _) = methods
            .iter()
            .find(|(_, copy)| *copy == wrapped)
            .expect("a file opened through this VFS");
        &*(*real as *const ffi::sqlite3_io_methods)
    }

    unsafe extern "C" fn x_read(
        file: *mut ffi::sqlite3_file,
        buffer: *mut c_void,
        amount: c_int,
        offset: ffi::sqlite3_int64,
    ) -> c_int {
        if hit(Fault::Io) {
            return ffi::SQLITE_IOERR_READ;
        }
        real(file).xRead.expect("xRead")(file, buffer, amount, offset)
    }

    unsafe extern "C" fn x_write(
        file: *mut ffi::sqlite3_file,
        buffer: *const c_void,
        amount: c_int,
        offset: ffi::sqlite3_int64,
    ) -> c_int {
        if hit(Fault::Io) {
            return ffi::SQLITE_IOERR_WRITE;
        }
        real(file).xWrite.expect("xWrite")(file, buffer, amount, offset)
    }

    unsafe extern "C" fn x_truncate(
        file: *mut ffi::sqlite3_file,
        size: ffi::sqlite3_int64,
    ) -> c_int {
        if hit(Fault::Io) {
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
        real(file).xTruncate.expect("xTruncate")(file, size)
    }

    unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
        if hit(Fault::Io) {
            return ffi::SQLITE_IOERR_FSYNC;
        }
        real(file).xSync.expect("xSync")(file, flags)
    }

    unsafe extern "C" fn x_open(
        _vfs: *mut ffi::sqlite3_vfs,
        name: *const c_char,
        file: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int {
        let real_vfs = real_vfs();
        let code = (*real_vfs).xOpen.expect("xOpen")(real_vfs, name, file, flags, out_flags);
        if code == ffi::SQLITE_OK && !(*file).pMethods.is_null() {
            let real = (*file).pMethods as usize;
            let mut methods = METHODS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let copy = match methods.iter().find(|(original, _)| *original == real) {
                Some(&(_, copy)) => copy,
                None => {
                    let mut copy = *(*file).pMethods;
                    copy.xRead = Some(x_read);
                    copy.xWrite = Some(x_write);
                    copy.xTruncate = Some(x_truncate);
                    copy.xSync = Some(x_sync);
                    let copy = Box::into_raw(Box::new(copy)) as usize;
                    methods.push((real, copy));
                    copy
                }
            };
            (*file).pMethods = copy as *const ffi::sqlite3_io_methods;
        }
        code
    }

    /// Registers the wrapper as the default VFS.
    pub fn install() {
        // SAFETY: the default VFS lives as long as the process; the copy is leaked, so it
        // does too, and differs only in its name and `xOpen`, which passes the real VFS on.
        unsafe {
            let real = ffi::sqlite3_vfs_find(std::ptr::null());
            assert!(!real.is_null(), "SQLite has a default VFS");
            REAL_VFS.store(real as u64, Ordering::SeqCst);
            let mut wrapper = *real;
            wrapper.zName = c"faulty-io".as_ptr();
            wrapper.xOpen = Some(x_open);
            let wrapper = Box::into_raw(Box::new(wrapper));
            assert_eq!(ffi::sqlite3_vfs_register(wrapper, 1), ffi::SQLITE_OK);
        }
    }
}

/// Installs the allocator, SQLite's page cache of the library, then the VFS (which
/// initializes SQLite), once.
fn install_faults() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        allocator::install();
        assert!(
            userstore::sqlite_shared::page_cache::install(),
            "the library's page cache installs before SQLite initializes"
        );
        io_vfs::install();
    });
}

/// A stable memory that fails to grow when [`Fault::Grow`] says so.
#[derive(Clone)]
struct FaultyMemory(Rc<RefCell<Vec<u8>>>);

const WASM_PAGE: u64 = 65_536;

impl Memory for FaultyMemory {
    fn size(&self) -> u64 {
        self.0.borrow().len() as u64 / WASM_PAGE
    }

    fn grow(&self, pages: u64) -> i64 {
        if hit(Fault::Grow) {
            return -1;
        }
        let before = self.size();
        let bytes = (before + pages) * WASM_PAGE;
        self.0.borrow_mut().resize(bytes as usize, 0);
        before as i64
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        let at = offset as usize;
        dst.copy_from_slice(&self.0.borrow()[at..at + dst.len()]);
    }

    fn write(&self, offset: u64, src: &[u8]) {
        let at = offset as usize;
        self.0.borrow_mut()[at..at + src.len()].copy_from_slice(src);
    }
}

/// One store under test, reset to the base table before every write.
trait Subject {
    fn store(&mut self) -> &mut dyn UserStore;
    fn check_integrity(&self) -> Result<(), StoreError>;
    /// Back to the base table, as a trap would leave it; faults are disarmed.
    fn reset(&mut self);
    fn journal_mode(&self) -> JournalMode;
}

/// The WASI engine natively, on a database file through the default VFS.
struct FileSubject {
    _dir: tempfile::TempDir,
    path: PathBuf,
    base: PathBuf,
    config: SqliteConfig,
    store: Option<SqliteStore>,
}

impl FileSubject {
    fn new(config: SqliteConfig) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("users.db");
        let base = dir.path().join("base.db");
        let mut store = SqliteStore::open(&path, config.clone()).expect("opens");
        store.insert_batch(&base_users()).expect("the base table");
        store.close().expect("closes");
        std::fs::copy(&path, &base).expect("copies");
        let mut subject = Self {
            _dir: dir,
            path,
            base,
            config,
            store: None,
        };
        subject.reset();
        subject
    }
}

fn remove_if_there(path: &Path) {
    if path.exists() {
        std::fs::remove_file(path).expect("removes");
    }
}

impl Subject for FileSubject {
    fn store(&mut self) -> &mut dyn UserStore {
        self.store.as_mut().expect("open")
    }

    fn check_integrity(&self) -> Result<(), StoreError> {
        self.store.as_ref().expect("open").check_integrity()
    }

    fn reset(&mut self) {
        disarm();
        self.store = None;
        for suffix in ["-journal", "-wal", "-shm"] {
            let mut side = self.path.clone().into_os_string();
            side.push(suffix);
            remove_if_there(Path::new(&side));
        }
        std::fs::copy(&self.base, &self.path).expect("copies");
        self.store = Some(SqliteStore::open(&self.path, self.config.clone()).expect("reopens"));
    }

    fn journal_mode(&self) -> JournalMode {
        self.config.journal_mode
    }
}

/// The stable-memory engine on a memory that can refuse to grow.
struct StableSubject {
    name: String,
    base: Vec<u8>,
    config: SqliteConfig,
    store: Option<StableSqliteStore>,
}

impl StableSubject {
    fn new(name: &str, config: SqliteConfig) -> Self {
        let memory = FaultyMemory(Rc::new(RefCell::new(Vec::new())));
        let mut store =
            StableSqliteStore::open(name, memory.clone(), config.clone()).expect("opens");
        store.insert_batch(&base_users()).expect("the base table");
        store.close().expect("closes");
        let base = memory.0.borrow().clone();
        let mut subject = Self {
            name: name.to_string(),
            base,
            config,
            store: None,
        };
        subject.reset();
        subject
    }
}

impl Subject for StableSubject {
    fn store(&mut self) -> &mut dyn UserStore {
        self.store.as_mut().expect("open")
    }

    fn check_integrity(&self) -> Result<(), StoreError> {
        self.store.as_ref().expect("open").check_integrity()
    }

    fn reset(&mut self) {
        disarm();
        self.store = None;
        let memory = FaultyMemory(Rc::new(RefCell::new(self.base.clone())));
        let store = StableSqliteStore::open(&self.name, memory, self.config.clone());
        self.store = Some(store.expect("reopens"));
    }

    fn journal_mode(&self) -> JournalMode {
        self.config.journal_mode
    }
}

/// 600 users with even ids.
fn base_users() -> Vec<User> {
    (0..600u64)
        .map(|n| User::new(2 * n, name(2 * n, 30)))
        .collect()
}

fn name(id: u64, length: usize) -> String {
    let name = format!("user-{id}-");
    let pad = length.saturating_sub(name.len());
    name + &"n".repeat(pad)
}

/// A write, by name; its result as text.
type Write = (
    &'static str,
    fn(&mut dyn UserStore) -> Result<String, StoreError>,
);

fn writes() -> Vec<Write> {
    fn text<T: std::fmt::Debug>(result: Result<T, StoreError>) -> Result<String, StoreError> {
        result.map(|value| format!("{value:?}"))
    }
    vec![
        ("insert one", |s| text(s.insert(User::new(1, name(1, 100))))),
        ("insert 300", |s| {
            let users: Vec<User> = (0..300)
                .map(|n| User::new(2 * n + 1, name(2 * n + 1, 100)))
                .collect();
            text(s.insert_batch(&users))
        }),
        ("insert 50 and a duplicate", |s| {
            let mut users: Vec<User> = (300..350)
                .map(|n| User::new(2 * n + 1, name(2 * n + 1, 100)))
                .collect();
            users.push(User::new(0, name(0, 10)));
            text(s.insert_batch(&users))
        }),
        ("update one", |s| {
            text(s.update_username(10, &name(10, 120)))
        }),
        ("update 100", |s| {
            let users: Vec<User> = (0..100)
                .map(|n| User::new(2 * n, name(2 * n, 120)))
                .collect();
            text(s.update_batch(&users))
        }),
        ("update 50 and an unknown id", |s| {
            let mut users: Vec<User> = (0..50)
                .map(|n| User::new(2 * n, name(2 * n, 120)))
                .collect();
            users.push(User::new(1, name(1, 10)));
            text(s.update_batch(&users))
        }),
        ("delete one", |s| text(s.delete(20))),
        ("delete 100", |s| {
            text(s.delete_batch(&(100..200).map(|n| 2 * n).collect::<Vec<u64>>()))
        }),
        ("delete 20 and an unknown id", |s| {
            let mut ids: Vec<u64> = (200..220).map(|n| 2 * n).collect();
            ids.push(1);
            text(s.delete_batch(&ids))
        }),
    ]
}

fn table(subject: &mut dyn Subject) -> Vec<User> {
    subject.store().page(None, 10_000).expect("the table reads")
}

/// Outcomes over all injections.
#[derive(Default, Debug)]
struct Tally {
    /// Writes run with a fault armed that fired.
    faulted: u64,
    /// ... that succeeded all the same (SQLite recovered), with the unfaulted run's result.
    succeeded: u64,
    /// ... that failed with the unfaulted run's clean error, the table unchanged.
    clean_errors: u64,
    /// ... that failed with a storage error SQLite rolled back: the table unchanged.
    rolled_back: u64,
    /// ... that failed with a storage error without a journal: atomic only by the trap.
    trap_only: u64,
    /// Tables that changed under a failed write that should have left them alone.
    changed_by_failed_writes: u64,
}

/// Words each fault's error must carry, so that the user sees the real cause.
fn names_cause(fault: Fault, message: &str) -> bool {
    let message = message.to_lowercase();
    match fault {
        Fault::Alloc => message.contains("out of memory"),
        Fault::Io => message.contains("disk i/o error"),
        Fault::Grow => message.contains("disk i/o error") || message.contains("disk is full"),
    }
}

/// Runs every write with the Nth `fault` for N = 1, 2, … on `subject`, checking each.
fn inject(label: &str, subject: &mut dyn Subject, fault: Fault, tally: &mut Tally) {
    let base = table(subject);
    for (write_name, write) in writes() {
        subject.reset();
        let expected = write(subject.store());
        let expected_table = table(subject);
        for persistent in [false, true] {
            for nth in 1.. {
                let context =
                    format!("{label}, {write_name}, {fault:?} #{nth} (persistent: {persistent})");
                subject.reset();
                arm(fault, nth, persistent);
                let result = write(subject.store());
                let fired = disarm();
                if fired == 0 {
                    assert_eq!(result, expected, "{context}: no fault, the same result");
                    break;
                }
                tally.faulted += 1;
                let journal = subject.journal_mode() != JournalMode::Off;
                match &result {
                    Ok(_) => {
                        assert_eq!(result, expected, "{context}: the result");
                        assert_eq!(table(subject), expected_table, "{context}: the table");
                        tally.succeeded += 1;
                    }
                    Err(StoreError::Storage { message }) => {
                        assert!(names_cause(fault, message), "{context}: {message}");
                        assert!(
                            !message.contains("no transaction is active"),
                            "{context}: {message}"
                        );
                        if journal {
                            let now = table(subject);
                            if now != base {
                                tally.changed_by_failed_writes += 1;
                            }
                            assert_eq!(now, base, "{context}: rolled back by SQLite");
                            tally.rolled_back += 1;
                        } else {
                            tally.trap_only += 1;
                        }
                    }
                    Err(_) => {
                        assert_eq!(result, expected, "{context}: the clean error");
                        let now = table(subject);
                        if now != base {
                            tally.changed_by_failed_writes += 1;
                        }
                        assert_eq!(now, base, "{context}: the table as before");
                        tally.clean_errors += 1;
                    }
                }
                if journal || !matches!(result, Err(StoreError::Storage { .. })) {
                    if let Err(error) = subject.check_integrity() {
                        panic!("{context}: {error}");
                    }
                }
                assert!(nth < 100_000, "{context}: the write never ran through");
            }
        }
    }
}

fn stable_config(journal_mode: JournalMode, page_size: u32, cache_size_pages: u32) -> SqliteConfig {
    SqliteConfig {
        journal_mode,
        page_size,
        cache_size_pages,
        ..StableSqliteStore::config_with_journal_mode(journal_mode)
    }
}

#[test]
fn the_wasi_engine_survives_failed_allocations_and_io_in_every_journal_mode() {
    let _turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    install_faults();
    let mut tally = Tally::default();
    for journal_mode in [
        JournalMode::Delete,
        JournalMode::Truncate,
        JournalMode::Persist,
        JournalMode::Memory,
        JournalMode::Wal,
        JournalMode::Off,
    ] {
        let config = SqliteConfig {
            cache_size_pages: 16,
            ..SqliteConfig::with_journal_mode(journal_mode)
        };
        let mut subject = FileSubject::new(config);
        for fault in [Fault::Alloc, Fault::Io] {
            inject(
                &format!("sqlite {journal_mode:?}"),
                &mut subject,
                fault,
                &mut tally,
            );
        }
    }
    println!("the WASI engine: {tally:?}");
    assert!(tally.faulted > 0 && tally.rolled_back > 0, "{tally:?}");
    assert_eq!(tally.changed_by_failed_writes, 0);
}

#[test]
fn the_stable_engine_survives_failed_allocations_and_grows() {
    let _turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    install_faults();
    let mut tally = Tally::default();
    let configs = [
        ("default", StableSqliteStore::default_config()),
        (
            "off",
            StableSqliteStore::config_with_journal_mode(JournalMode::Off),
        ),
        (
            "4 KiB pages",
            stable_config(JournalMode::Memory, 4_096, 40_960),
        ),
        (
            "512 B pages, 8-page cache",
            stable_config(JournalMode::Memory, 512, 8),
        ),
        (
            "64 KiB pages, 4-page cache",
            stable_config(JournalMode::Memory, 65_536, 4),
        ),
        (
            "off, 512 B pages, 8-page cache",
            stable_config(JournalMode::Off, 512, 8),
        ),
    ];
    for (label, config) in configs {
        let mut subject = StableSubject::new(&format!("faults-{label}.db"), config);
        for fault in [Fault::Alloc, Fault::Grow] {
            inject(
                &format!("stable sqlite {label}"),
                &mut subject,
                fault,
                &mut tally,
            );
        }
    }
    println!("the stable-memory engine: {tally:?}");
    assert!(tally.faulted > 0 && tally.rolled_back > 0, "{tally:?}");
    assert_eq!(tally.changed_by_failed_writes, 0);
}
