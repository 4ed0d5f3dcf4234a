//! The SQLite VFS `userstore-stable`: database files that are [`MemoryFile`]s, with no file
//! system in between.
//!
//! [`register_vfs`] registers it once with SQLite (never as the default VFS, so SQLite's
//! other databases keep theirs). [`register_file`] maps a file name, what a connection
//! opens with this VFS, to a `Memory`; several files can live side by side, each in its
//! own Memory, and a file is open in at most one connection at a time.
//!
//! Only main database files exist here. The store runs SQLite with `journal_mode=MEMORY`
//! (or OFF) and `temp_store=MEMORY`, so SQLite never opens a journal, WAL or temporary file
//! through the VFS: `xOpen` refuses them and `xAccess` reports them absent, so SQLite never
//! looks for a hot journal. Why that is safe on the IC is in the [`super`] documentation.

use super::memory_file::{MemoryFile, MemoryFileError, Read, WriteStats, HEADER_SIZE};
use ic_stable_structures::Memory;
use rusqlite::ffi;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;
use std::ptr;
use std::rc::Rc;
use std::sync::OnceLock;

/// The name the VFS is registered under.
pub const VFS_NAME: &CStr = c"userstore-stable";

/// Longest file name the VFS accepts (its `mxPathname`), in bytes.
pub const MAX_NAME_LEN: usize = 512;

/// The IC's stable-memory dirty-page unit, reported as the sector size
/// (docs/metering.md §6).
const SECTOR_SIZE: c_int = 4096;

/// Julian day number of the Unix epoch, in milliseconds (what `xCurrentTimeInt64` counts).
const UNIX_EPOCH_JULIAN_MS: i64 = 210_866_760_000_000;

/// What went wrong registering a file or the VFS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VfsError {
    /// `sqlite3_initialize` or `sqlite3_vfs_register` failed with this SQLite code.
    Register(c_int),
    /// The name is empty, longer than [`MAX_NAME_LEN`] or contains a NUL byte.
    InvalidName(String),
    /// The file is open, or a [`FileHandle`] to it is alive, so it cannot be replaced.
    InUse(String),
    /// The Memory cannot hold this file.
    Memory(String, MemoryFileError),
}

impl fmt::Display for VfsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Register(code) => write!(f, "registering the SQLite VFS failed: code {code}"),
            Self::InvalidName(name) => write!(f, "invalid database file name {name:?}"),
            Self::InUse(name) => write!(f, "database file {name:?} is in use"),
            Self::Memory(name, error) => write!(f, "database file {name:?}: {error}"),
        }
    }
}

impl std::error::Error for VfsError {}

/// A registered file: its Memory and whether a connection has it open.
struct Entry {
    file: MemoryFile,
    open: Cell<bool>,
}

thread_local! {
    static REGISTRY: RefCell<BTreeMap<String, Rc<Entry>>> = const { RefCell::new(BTreeMap::new()) };
    static CLOCK: Cell<Option<fn() -> u64>> = const { Cell::new(None) };
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0x005e_ed0f_5719_11e5) };
}

fn lookup(name: &str) -> Option<Rc<Entry>> {
    REGISTRY.with(|registry| registry.try_borrow().ok()?.get(name).cloned())
}

/// Registers `memory` as the database file `name` and returns its handle. Replaces a file
/// registered under the same name only if no connection and no handle use it. Reads the
/// Memory's header but writes nothing: a fresh Memory gets its header when SQLite first
/// opens it with `SQLITE_OPEN_CREATE`.
pub fn register_file(name: &str, memory: Box<dyn Memory>) -> Result<FileHandle, VfsError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.as_bytes().contains(&0) {
        return Err(VfsError::InvalidName(name.to_string()));
    }
    let file = MemoryFile::load(memory).map_err(|error| VfsError::Memory(name.into(), error))?;
    let entry = Rc::new(Entry {
        file,
        open: Cell::new(false),
    });
    with_name_unused(name, |registry| {
        registry.insert(name.to_string(), Rc::clone(&entry));
    })?;
    Ok(FileHandle(entry))
}

/// Forgets the file `name`, releasing its Memory (a host that opens the database per request
/// hands it a new Memory each time, and must not keep the last one). Refused, like a
/// replacement, while a connection or a handle uses it; a name never registered is no error.
pub fn unregister_file(name: &str) -> Result<(), VfsError> {
    with_name_unused(name, |registry| {
        registry.remove(name);
    })
}

/// Runs `change` on the registry unless the file registered as `name` is in use (a
/// connection has it open or a handle holds it): a registration is replaced or forgotten
/// only when nothing can still reach it.
fn with_name_unused(
    name: &str,
    change: impl FnOnce(&mut BTreeMap<String, Rc<Entry>>),
) -> Result<(), VfsError> {
    REGISTRY.with(|registry| {
        let mut registry = registry
            .try_borrow_mut()
            .map_err(|_| VfsError::InUse(name.to_string()))?;
        if let Some(existing) = registry.get(name) {
            if existing.open.get() || Rc::strong_count(existing) > 1 {
                return Err(VfsError::InUse(name.to_string()));
            }
        }
        change(&mut registry);
        Ok(())
    })
}

/// A registered file as the store sees it: the header's application value, the sizes and
/// the write counters. Keeping a handle keeps the file registered.
#[derive(Clone)]
pub struct FileHandle(Rc<Entry>);

impl fmt::Debug for FileHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileHandle")
            .field("file_size", &self.0.file.file_size())
            .finish()
    }
}

impl FileHandle {
    /// The header's application value, if it was ever set.
    pub fn app_value(&self) -> Option<u64> {
        self.0.file.app_value()
    }

    /// Sets the header's application value (one 16-byte stable-memory write).
    pub fn set_app_value(&self, value: u64) -> Result<(), MemoryFileError> {
        self.0.file.set_app_value(value)
    }

    /// The database file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.0.file.file_size()
    }

    /// The Memory's size in bytes (header and the unused tail of the last Wasm page
    /// included).
    pub fn memory_bytes(&self) -> u64 {
        self.0.file.memory_bytes()
    }

    /// Write counters since the file was registered.
    pub fn stats(&self) -> WriteStats {
        self.0.file.stats()
    }
}

/// Sets the clock `xCurrentTime` reads, in nanoseconds since the Unix epoch (in a canister:
/// `ic0.time`). Without one the VFS's time is the Unix epoch, which keeps SQLite's `'now'`
/// deterministic in tests.
pub fn set_clock(clock: fn() -> u64) {
    CLOCK.with(|cell| cell.set(Some(clock)));
}

fn now_unix_ms() -> i64 {
    let nanos = CLOCK.with(|cell| cell.get()).map_or(0, |clock| clock());
    i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX)
}

/// Deterministic pseudo-random bytes (splitmix64): every replica must compute the same.
/// SQLite draws its own random numbers (journal nonces, `random()`) from the default VFS, not
/// this one ([`crate::sqlite_shared::randomness`]), so this serves only a caller that asks
/// this VFS directly.
fn fill_random(buffer: &mut [u8]) {
    RANDOM_STATE.with(|state| {
        for chunk in buffer.chunks_mut(8) {
            let mut z = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
            state.set(z);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    });
}

/// SQLite's `sqlite3_file` for this VFS: SQLite allocates `szOsFile` bytes and `xOpen`
/// fills them in; `base` must come first.
#[repr(C)]
struct StableFile {
    base: ffi::sqlite3_file,
    /// From `Rc::into_raw` in `x_open`, released in `x_close`; null if the open failed.
    entry: *const Entry,
}

/// The file behind an open `sqlite3_file`.
///
/// # Safety
/// `file` must be what SQLite passes to an io method of this VFS: a `StableFile` that
/// `x_open` initialized and `x_close` has not closed.
unsafe fn file_of<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a MemoryFile> {
    let file = file as *const StableFile;
    if file.is_null() {
        return None;
    }
    // SAFETY: per the function contract `file` points to an initialized `StableFile`.
    let entry = unsafe { (*file).entry };
    if entry.is_null() {
        return None;
    }
    // SAFETY: `entry` came from `Rc::into_raw` in `x_open`; the Rc it stands for is released
    // only in `x_close`, after which SQLite calls no io method of this file.
    Some(unsafe { &(*entry).file })
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let file = file as *mut StableFile;
    if file.is_null() {
        return ffi::SQLITE_OK;
    }
    // SAFETY: SQLite calls xClose once, with a file `x_open` opened.
    let entry = unsafe { (*file).entry };
    if !entry.is_null() {
        // SAFETY: `entry` came from `Rc::into_raw` in `x_open` and is released here once:
        // the field is nulled right after.
        let entry = unsafe { Rc::from_raw(entry) };
        entry.open.set(false);
        // SAFETY: as above, `file` is valid for writes.
        unsafe {
            (*file).entry = ptr::null();
            (*file).base.pMethods = ptr::null();
        }
    }
    ffi::SQLITE_OK
}

/// The file, length and offset of an `xRead` or `xWrite` call, if SQLite's arguments are
/// usable: a file of this VFS, a buffer, and a length and offset that are not negative.
///
/// # Safety
/// As [`file_of`].
unsafe fn io_call<'a>(
    file: *mut ffi::sqlite3_file,
    buffer: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> Option<(&'a MemoryFile, usize, u64)> {
    if buffer.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    let file = unsafe { file_of(file) }?;
    Some((
        file,
        usize::try_from(amount).ok()?,
        u64::try_from(offset).ok()?,
    ))
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buffer: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes a file it opened through this VFS.
    let Some((file, len, offset)) = (unsafe { io_call(file, buffer, amount, offset) }) else {
        return ffi::SQLITE_IOERR_READ;
    };
    // SAFETY: SQLite's buffer is valid for writes of `amount` bytes and is heap memory,
    // never part of the Memory.
    match unsafe { file.read(buffer as *mut u8, len, offset) } {
        Read::Complete => ffi::SQLITE_OK,
        Read::Short => ffi::SQLITE_IOERR_SHORT_READ,
        Read::OutOfRange => ffi::SQLITE_IOERR_READ,
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buffer: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes a file it opened through this VFS.
    let Some((file, len, offset)) = (unsafe { io_call(file, buffer, amount, offset) }) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite's buffer holds `amount` initialized bytes for the whole call.
    let source = unsafe { std::slice::from_raw_parts(buffer as *const u8, len) };
    if file.write(source, offset) {
        ffi::SQLITE_OK
    } else {
        ffi::SQLITE_FULL
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: SQLite passes a file it opened through this VFS.
    let Some(file) = (unsafe { file_of(file) }) else {
        return ffi::SQLITE_IOERR_TRUNCATE;
    };
    match u64::try_from(size) {
        Ok(size) if file.truncate(size) => ffi::SQLITE_OK,
        Ok(_) => ffi::SQLITE_FULL,
        Err(_) => ffi::SQLITE_IOERR_TRUNCATE,
    }
}

unsafe extern "C" fn x_sync(_file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    // Nothing to flush: writes went to the Memory, and the message commits them.
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes a file it opened through this VFS.
    let Some(file) = (unsafe { file_of(file) }) else {
        return ffi::SQLITE_IOERR_FSTAT;
    };
    if size.is_null() {
        return ffi::SQLITE_IOERR_FSTAT;
    }
    // SAFETY: SQLite passes a valid pointer for the result.
    unsafe { *size = i64::try_from(file.file_size()).unwrap_or(i64::MAX) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    // One connection per file and one message at a time: there is nobody to lock out.
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(
    _file: *mut ffi::sqlite3_file,
    out: *mut c_int,
) -> c_int {
    if !out.is_null() {
        // SAFETY: SQLite passes a valid pointer for the result. No other connection can
        // hold a RESERVED lock: a file has at most one connection.
        unsafe { *out = 0 };
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    argument: *mut c_void,
) -> c_int {
    if op != ffi::SQLITE_FCNTL_SIZE_HINT || argument.is_null() {
        return ffi::SQLITE_NOTFOUND;
    }
    // SQLite announces the size the file will have after a commit's writes: grow the
    // Memory once instead of once per Wasm page. Failing here is not an error; the write
    // that needs the space reports SQLITE_FULL.
    // SAFETY: SQLite passes a file it opened through this VFS.
    if let Some(file) = unsafe { file_of(file) } {
        // SAFETY: for SIZE_HINT, `argument` points to an sqlite3_int64.
        let hint = unsafe { *(argument as *const ffi::sqlite3_int64) };
        if let Ok(hint) = u64::try_from(hint) {
            file.ensure_capacity(hint.saturating_add(HEADER_SIZE));
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    // With POWERSAFE_OVERWRITE SQLite does not base journaling on it.
    SECTOR_SIZE
}

unsafe extern "C" fn x_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    // A write never damages bytes outside its range, so SQLite never journals the
    // neighbouring pages of a sector.
    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_lock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// A name SQLite passes, as UTF-8.
///
/// # Safety
/// `name` must be null or point to a NUL-terminated string.
unsafe fn name_of<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    unsafe { CStr::from_ptr(name) }.to_str().ok()
}

fn is_journal_name(name: &str) -> bool {
    name.ends_with("-journal") || name.ends_with("-wal") || name.ends_with("-shm")
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    if file.is_null() {
        return ffi::SQLITE_CANTOPEN;
    }
    let file = file as *mut StableFile;
    // SAFETY: SQLite allocated `szOsFile` bytes for the file, suitably aligned. Writing a
    // closed file first means SQLite sees `pMethods == NULL`, and never calls xClose, if
    // the open fails below.
    unsafe {
        ptr::write(
            file,
            StableFile {
                base: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                entry: ptr::null(),
            },
        )
    };
    if flags & ffi::SQLITE_OPEN_MAIN_DB == 0 {
        return ffi::SQLITE_CANTOPEN;
    }
    // SAFETY: SQLite passes null (temporary files) or a NUL-terminated name.
    let Some(entry) = (unsafe { name_of(name) }).and_then(lookup) else {
        return ffi::SQLITE_CANTOPEN;
    };
    if entry.open.get() {
        return ffi::SQLITE_CANTOPEN;
    }
    let creatable = flags & ffi::SQLITE_OPEN_CREATE != 0;
    let ready = entry.file.is_initialized() || (creatable && entry.file.initialize());
    if !ready {
        return ffi::SQLITE_CANTOPEN;
    }
    entry.open.set(true);
    // SAFETY: `file` was initialized above; the Rc is released in `x_close`.
    unsafe {
        (*file).entry = Rc::into_raw(entry);
        (*file).base.pMethods = &IO_METHODS;
    }
    if !out_flags.is_null() {
        // SAFETY: SQLite passes a valid pointer when it is not null.
        unsafe { *out_flags = flags };
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _sync: c_int,
) -> c_int {
    // SAFETY: SQLite passes a NUL-terminated name.
    match unsafe { name_of(name) } {
        // A registered database is never deleted through SQLite.
        Some(name) if lookup(name).is_some() => ffi::SQLITE_IOERR_DELETE,
        // Journals and anything else do not exist: deleting them succeeds.
        _ => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _flags: c_int,
    out: *mut c_int,
) -> c_int {
    if out.is_null() {
        return ffi::SQLITE_IOERR_ACCESS;
    }
    // SAFETY: SQLite passes a NUL-terminated name.
    let exists = match unsafe { name_of(name) } {
        Some(name) if !is_journal_name(name) => {
            lookup(name).is_some_and(|entry| entry.file.is_initialized())
        }
        _ => false,
    };
    // SAFETY: checked non-null above; SQLite passes a valid pointer.
    unsafe { *out = c_int::from(exists) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    out_len: c_int,
    out: *mut c_char,
) -> c_int {
    if name.is_null() || out.is_null() {
        return ffi::SQLITE_CANTOPEN;
    }
    // Names are registry keys, used as they are.
    // SAFETY: SQLite passes a NUL-terminated name.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes_with_nul();
    if usize::try_from(out_len).map_or(true, |capacity| bytes.len() > capacity) {
        return ffi::SQLITE_CANTOPEN;
    }
    // SAFETY: `out` holds `out_len >= bytes.len()` bytes, separate from the input.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr() as *const c_char, out, bytes.len()) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_randomness(
    _vfs: *mut ffi::sqlite3_vfs,
    len: c_int,
    out: *mut c_char,
) -> c_int {
    let Ok(len_bytes) = usize::try_from(len) else {
        return 0;
    };
    if out.is_null() {
        return 0;
    }
    // SAFETY: SQLite passes a buffer of `len` bytes. It may be uninitialized, so it is
    // written whole before any byte is read.
    unsafe { ptr::write_bytes(out, 0, len_bytes) };
    // SAFETY: now initialized, and valid for `len` bytes.
    fill_random(unsafe { std::slice::from_raw_parts_mut(out as *mut u8, len_bytes) });
    len
}

unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    // A canister cannot sleep, and nothing ever waits for a lock here.
    microseconds
}

unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    if out.is_null() {
        return ffi::SQLITE_ERROR;
    }
    let julian_ms = UNIX_EPOCH_JULIAN_MS.saturating_add(now_unix_ms());
    // SAFETY: SQLite passes a valid pointer for the result.
    unsafe { *out = julian_ms as f64 / 86_400_000.0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_current_time_int64(
    _vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    if out.is_null() {
        return ffi::SQLITE_ERROR;
    }
    // SAFETY: SQLite passes a valid pointer for the result.
    unsafe { *out = UNIX_EPOCH_JULIAN_MS.saturating_add(now_unix_ms()) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_get_last_error(
    _vfs: *mut ffi::sqlite3_vfs,
    len: c_int,
    out: *mut c_char,
) -> c_int {
    if len > 0 && !out.is_null() {
        // SAFETY: SQLite passes a buffer of `len` bytes.
        unsafe { *out = 0 };
    }
    0
}

/// The registered `sqlite3_vfs`'s address, or SQLite's error code.
static REGISTERED: OnceLock<Result<usize, c_int>> = OnceLock::new();

/// Installs the engine's page cache ([`crate::sqlite_shared::page_cache::install`]), initializes SQLite and
/// registers the VFS under [`VFS_NAME`], not as the default.
/// Idempotent.
pub fn register_vfs() -> Result<(), VfsError> {
    let registered = REGISTERED.get_or_init(|| {
        // The page cache is chosen before SQLite initializes, or never.
        crate::sqlite_shared::page_cache::install();
        // SAFETY: sqlite3_initialize may be called any number of times.
        let code = unsafe { ffi::sqlite3_initialize() };
        if code != ffi::SQLITE_OK {
            return Err(code);
        }
        let vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: std::mem::size_of::<StableFile>() as c_int,
            mxPathname: MAX_NAME_LEN as c_int,
            pNext: ptr::null_mut(),
            zName: VFS_NAME.as_ptr(),
            pAppData: ptr::null_mut(),
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: None,
            xDlError: None,
            xDlSym: None,
            xDlClose: None,
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        });
        // SQLite keeps the pointer for the rest of the process: the VFS is leaked.
        let vfs = Box::into_raw(vfs);
        // SAFETY: `vfs` is a valid, leaked `sqlite3_vfs` with a static name; 0: not the
        // default VFS.
        let code = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
        if code != ffi::SQLITE_OK {
            return Err(code);
        }
        Ok(vfs as usize)
    });
    registered.map(|_| ()).map_err(VfsError::Register)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    #[test]
    fn names_are_checked() {
        for name in ["", "a\0b", &"x".repeat(MAX_NAME_LEN + 1)] {
            assert!(matches!(
                register_file(name, Box::new(VectorMemory::default())),
                Err(VfsError::InvalidName(_))
            ));
        }
    }

    #[test]
    fn a_file_in_use_cannot_be_replaced() {
        let handle = register_file("in-use.db", Box::new(VectorMemory::default())).unwrap();
        assert_eq!(
            register_file("in-use.db", Box::new(VectorMemory::default())).err(),
            Some(VfsError::InUse("in-use.db".into()))
        );
        drop(handle);
        assert!(register_file("in-use.db", Box::new(VectorMemory::default())).is_ok());
    }
}
