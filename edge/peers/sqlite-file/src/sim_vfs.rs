//! The `userstore-sim` VFS (tests only): SQLite's files in a simulated disk
//! ([`userstore::file_memory::sim::SimDisk`]) that keeps only the synced writes, and a random
//! part of the others, at a power cut, and fails every write from a chosen operation on. The
//! disk of the calling thread ([`install`]) holds the files: each test thread has its own.
//!
//! Directory operations (a file created, a file deleted) are durable at once, as in SQLite's
//! own crash tests (its `crash` VFS passes them to the real file system): with
//! `locking_mode=EXCLUSIVE`, which the store always sets, SQLite ends a DELETE journal as a
//! PERSIST one (its header zeroed) and deletes nothing but a WAL at a clean close. A delete
//! is an operation of the disk, so it fails once the process is dead.

use rusqlite::ffi;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;
use userstore::file_memory::sim::{SimDisk, SimFile, XorShift};
use userstore::file_memory::DiskFile;

/// The VFS's name.
pub const NAME: &CStr = c"userstore-sim";

/// The files of one thread's disk: names to the disk's files. A deleted then re-created
/// name gets a new file of the disk, as a new inode.
struct SimFs {
    disk: SimDisk,
    names: HashMap<String, String>,
    created: u64,
    random: XorShift,
}

thread_local! {
    static FS: RefCell<Option<SimFs>> = const { RefCell::new(None) };
}

/// Makes `disk` (empty) the disk of this thread's `userstore-sim` files, and registers the
/// VFS (once per process).
pub fn install(disk: SimDisk) {
    register();
    FS.with(|fs| {
        *fs.borrow_mut() = Some(SimFs {
            disk,
            names: HashMap::new(),
            created: 0,
            random: XorShift::new(7),
        })
    });
}

fn with_fs<T>(body: impl FnOnce(&mut SimFs) -> T) -> T {
    FS.with(|fs| body(fs.borrow_mut().as_mut().expect("sim_vfs::install first")))
}

fn register() {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        let vfs = ffi::sqlite3_vfs {
            iVersion: 1,
            szOsFile: std::mem::size_of::<VfsFile>() as c_int,
            mxPathname: 512,
            pNext: std::ptr::null_mut(),
            zName: NAME.as_ptr(),
            pAppData: std::ptr::null_mut(),
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
            xGetLastError: None,
            xCurrentTimeInt64: None,
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        };
        // SAFETY: the VFS is leaked, so it lives as long as the process.
        let rc = unsafe { ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0) };
        assert_eq!(rc, ffi::SQLITE_OK, "registering the sim VFS");
    });
}

/// An open file: SQLite's header, then ours.
#[repr(C)]
struct VfsFile {
    base: ffi::sqlite3_file,
    open: *mut OpenFile,
}

struct OpenFile {
    file: SimFile,
    /// The name to remove at the close (`SQLITE_OPEN_DELETEONCLOSE`).
    delete_on_close: Option<String>,
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
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

/// The open file of `file`.
///
/// # Safety
/// `file` was opened by [`x_open`] and not closed.
unsafe fn open_file<'a>(file: *mut ffi::sqlite3_file) -> &'a OpenFile {
    unsafe { &*(*file.cast::<VfsFile>()).open }
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives a file of `szOsFile` bytes and a name (or null, a temporary file).
    unsafe {
        (*file).pMethods = std::ptr::null();
        let name = (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned());
        let opened = with_fs(|fs| {
            let name = name.unwrap_or_else(|| {
                fs.created += 1;
                format!("temp-{}", fs.created)
            });
            let key = match fs.names.get(&name) {
                Some(key) => key.clone(),
                None if flags & ffi::SQLITE_OPEN_CREATE != 0 => {
                    fs.created += 1;
                    let key = format!("{name}#{}", fs.created);
                    fs.names.insert(name.clone(), key.clone());
                    key
                }
                None => return None,
            };
            let delete_on_close = (flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0).then_some(name);
            Some(OpenFile {
                file: fs.disk.open(&key),
                delete_on_close,
            })
        });
        let Some(opened) = opened else {
            return ffi::SQLITE_CANTOPEN;
        };
        (*file.cast::<VfsFile>()).open = Box::into_raw(Box::new(opened));
        (*file).pMethods = &METHODS;
        if !out_flags.is_null() {
            *out_flags = flags;
        }
        ffi::SQLITE_OK
    }
}

/// Removes `name`: an operation of the disk (it fails once the process is dead).
fn delete(name: &str) -> c_int {
    with_fs(|fs| {
        let Some(key) = fs.names.get(name) else {
            return ffi::SQLITE_IOERR_DELETE_NOENT;
        };
        let file = fs.disk.open(key);
        // A change of nothing, but an operation: the crash point a delete is.
        let alive = file.byte_len().and_then(|len| file.set_len(len));
        if alive.is_err() {
            return ffi::SQLITE_IOERR_DELETE;
        }
        fs.names.remove(name);
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _sync_dir: c_int,
) -> c_int {
    // SAFETY: SQLite's name.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    delete(&name)
}

unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: SQLite's name and result.
    unsafe {
        let name = CStr::from_ptr(name).to_string_lossy();
        *out = c_int::from(with_fs(|fs| fs.names.contains_key(name.as_ref())));
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: SQLite's name, and a buffer of `size` bytes.
    unsafe {
        let name = CStr::from_ptr(name).to_bytes_with_nul();
        if name.len() > size as usize {
            return ffi::SQLITE_CANTOPEN;
        }
        std::ptr::copy_nonoverlapping(name.as_ptr().cast(), out, name.len());
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_randomness(
    _vfs: *mut ffi::sqlite3_vfs,
    len: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: a buffer of `len` bytes. Deterministic, so a crash point replays.
    unsafe {
        let out = std::slice::from_raw_parts_mut(out.cast::<u8>(), len as usize);
        with_fs(|fs| {
            for byte in out.iter_mut() {
                *byte = fs.random.next_u64() as u8;
            }
        });
    }
    len
}

unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    microseconds
}

unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: SQLite's result. A fixed day: nothing here depends on the time.
    unsafe { *out = 2_460_000.5 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of this VFS, boxed at the open.
    let open = unsafe { Box::from_raw((*file.cast::<VfsFile>()).open) };
    match &open.delete_on_close {
        Some(name) => match delete(name) {
            ffi::SQLITE_OK => ffi::SQLITE_OK,
            _ => ffi::SQLITE_IOERR_CLOSE,
        },
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file, and a buffer of `amount` bytes.
    unsafe {
        let open = open_file(file);
        let buf = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amount as usize);
        let (Ok(len), Ok(())) = (open.file.byte_len(), open.file.read_at(offset as u64, buf))
        else {
            return ffi::SQLITE_IOERR_READ;
        };
        if (offset as u64) + (amount as u64) > len {
            ffi::SQLITE_IOERR_SHORT_READ
        } else {
            ffi::SQLITE_OK
        }
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file, and a buffer of `amount` bytes.
    unsafe {
        let data = std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize);
        match open_file(file).file.write_at(offset as u64, data) {
            Ok(()) => ffi::SQLITE_OK,
            Err(_) => ffi::SQLITE_IOERR_WRITE,
        }
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: an open file.
    match unsafe { open_file(file) }.file.set_len(size as u64) {
        Ok(()) => ffi::SQLITE_OK,
        Err(_) => ffi::SQLITE_IOERR_TRUNCATE,
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    // SAFETY: an open file.
    match unsafe { open_file(file) }.file.sync() {
        Ok(()) => ffi::SQLITE_OK,
        Err(_) => ffi::SQLITE_IOERR_FSYNC,
    }
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file, and SQLite's result.
    unsafe {
        match open_file(file).file.byte_len() {
            Ok(len) => {
                *size = len as ffi::sqlite3_int64;
                ffi::SQLITE_OK
            }
            Err(_) => ffi::SQLITE_IOERR_FSTAT,
        }
    }
}

unsafe extern "C" fn x_lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    // One connection per disk: every lock is granted.
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(
    _file: *mut ffi::sqlite3_file,
    out: *mut c_int,
) -> c_int {
    // SAFETY: SQLite's result.
    unsafe { *out = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(
    _file: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    // The simulated disk tears a write at 512-byte sectors.
    512
}

unsafe extern "C" fn x_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    // What the unix VFS answers by default: a write changes no byte outside itself, even at a
    // power cut (the simulated disk tears a write, never its neighbours).
    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
}
