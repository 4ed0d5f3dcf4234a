//! The `userstore-counting` VFS: the VFS a [`crate::SqliteFileStore`] would use (`unix-none` on
//! WASI, `unix` natively), with the syncs and the bytes read and written of every file a
//! connection opens (the database, its rollback journal or its WAL) counted in the
//! [`IoCounters`] that connection's filename names.
//!
//! The VFS is registered once per process; a connection opts in with the URI parameter
//! [`IO_PARAMETER`], the number [`register_counters`] gave its counters (SQLite passes the
//! database's URI parameters to the journal's and the WAL's `xOpen` as well). A file opened
//! without one (a temporary file) is passed through uncounted. Memory-mapped reads would
//! bypass `xRead`, so the files offer no `xFetch` (SQLite's `mmap_size` is 0 anyway).

use rusqlite::ffi;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use userstore_peer_common::IoCounters;

/// The VFS's name.
pub const NAME: &CStr = c"userstore-counting";

/// The URI parameter naming a connection's counters.
pub const IO_PARAMETER: &str = "userstore_io";

/// The counters of the open connections, by number.
struct Registry {
    next: i64,
    counters: HashMap<i64, Weak<IoCounters>>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Mutex::new(Registry {
            next: 1,
            counters: HashMap::new(),
        })
    })
}

/// Registers `counters` for the files of one connection: the number to name them by in the
/// URI parameter [`IO_PARAMETER`]. The entry lasts as long as `counters` does (a dead one is
/// swept at the next registration).
pub fn register_counters(counters: &Arc<IoCounters>) -> i64 {
    let mut registry = registry()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    registry.counters.retain(|_, weak| weak.strong_count() > 0);
    let number = registry.next;
    registry.next += 1;
    registry.counters.insert(number, Arc::downgrade(counters));
    number
}

/// The counters registered as `number`.
fn counters_of(number: i64) -> Option<Arc<IoCounters>> {
    let registry = registry()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    registry.counters.get(&number).and_then(Weak::upgrade)
}

/// Registers the VFS wrapping `base` (once per process); false if SQLite has no VFS named
/// `base`.
pub fn register(base: &CStr) -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let base = base.to_owned();
    *REGISTERED.get_or_init(move || register_wrapping(&base))
}

/// The wrapped VFS, once registered.
static BASE: OnceLock<usize> = OnceLock::new();

fn base_vfs() -> *mut ffi::sqlite3_vfs {
    *BASE.get().expect("the counting VFS is registered") as *mut ffi::sqlite3_vfs
}

fn register_wrapping(base: &CStr) -> bool {
    // SAFETY: `sqlite3_vfs_find` initializes SQLite and returns a VFS that lives as long as
    // the process. The wrapper copies it (its methods and its app data) but for its name,
    // `xOpen` and its file size; it is leaked, so it lives as long too. Every copied method of
    // SQLite's unix VFSes ignores the VFS it is given, or reads only the copied fields.
    unsafe {
        let base = ffi::sqlite3_vfs_find(base.as_ptr());
        if base.is_null() {
            return false;
        }
        BASE.get_or_init(|| base as usize);
        let mut wrapper = *base;
        wrapper.zName = NAME.as_ptr();
        wrapper.pNext = std::ptr::null_mut();
        wrapper.szOsFile = (INNER_OFFSET + (*base).szOsFile as usize) as c_int;
        wrapper.xOpen = Some(x_open);
        let wrapper = Box::into_raw(Box::new(wrapper));
        ffi::sqlite3_vfs_register(wrapper, 0) == ffi::SQLITE_OK
    }
}

/// A file of the VFS: SQLite's file header, the counters (null: not counted), then the
/// wrapped VFS's own file, at [`INNER_OFFSET`].
#[repr(C)]
struct CountingFile {
    base: ffi::sqlite3_file,
    counters: *const IoCounters,
}

/// Where the wrapped file starts, 8-byte aligned.
const INNER_OFFSET: usize = std::mem::size_of::<CountingFile>().next_multiple_of(8);

/// The wrapped file of `file`.
///
/// # Safety
/// `file` is a file of this VFS (SQLite allocated `szOsFile` bytes for it).
unsafe fn inner(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { file.cast::<u8>().add(INNER_OFFSET).cast() }
}

/// The counters of `file`, if it is counted.
///
/// # Safety
/// `file` is an open file of this VFS.
unsafe fn counters<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a IoCounters> {
    unsafe { (*file.cast::<CountingFile>()).counters.as_ref() }
}

/// The wrapped file's methods.
///
/// # Safety
/// `file` is an open file of this VFS.
unsafe fn methods<'a>(file: *mut ffi::sqlite3_file) -> &'a ffi::sqlite3_io_methods {
    unsafe { &*(*inner(file)).pMethods }
}

/// Our methods for files whose wrapped methods are `inner` (one leaked table per distinct
/// table of the wrapped VFS: they differ in version and shared-memory support).
fn methods_for(inner: *const ffi::sqlite3_io_methods) -> *const ffi::sqlite3_io_methods {
    static TABLES: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    let mut tables = tables.lock().unwrap_or_else(|poison| poison.into_inner());
    let ours = tables.entry(inner as usize).or_insert_with(|| {
        // SAFETY: SQLite's file methods live as long as the process.
        let inner = unsafe { &*inner };
        let has_shm = inner.iVersion >= 2 && inner.xShmMap.is_some();
        let table = ffi::sqlite3_io_methods {
            // No xFetch/xUnfetch (version 3): a memory-mapped read would not be counted.
            iVersion: inner.iVersion.min(2),
            xClose: Some(x_close),
            xRead: Some(x_read),
            xWrite: Some(x_write),
            xTruncate: Some(x_truncate),
            xSync: Some(x_sync),
            xFileSize: Some(x_file_size),
            xLock: Some(x_lock),
            xUnlock: Some(x_unlock),
            xCheckReservedLock: Some(x_check_reserved_lock),
            xFileControl: Some(x_file_control),
            xSectorSize: Some(x_sector_size),
            xDeviceCharacteristics: Some(x_device_characteristics),
            xShmMap: has_shm.then_some(x_shm_map as _),
            xShmLock: has_shm.then_some(x_shm_lock as _),
            xShmBarrier: has_shm.then_some(x_shm_barrier as _),
            xShmUnmap: has_shm.then_some(x_shm_unmap as _),
            xFetch: None,
            xUnfetch: None,
        };
        Box::into_raw(Box::new(table)) as usize
    });
    *ours as *const ffi::sqlite3_io_methods
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives a file of `szOsFile` bytes and a name it made (or null), which the
    // URI functions accept; the wrapped VFS opens its file in the space after the header.
    unsafe {
        let header = file.cast::<CountingFile>();
        (*header).base.pMethods = std::ptr::null();
        let counted = if name.is_null() {
            None
        } else {
            let parameter = CString::new(IO_PARAMETER).expect("no NUL");
            match ffi::sqlite3_uri_int64(name, parameter.as_ptr(), 0) {
                0 => None,
                number => counters_of(number),
            }
        };
        (*header).counters = std::ptr::null();
        let base = base_vfs();
        let rc = (*base).xOpen.expect("xOpen")(base, name, inner(file), flags, out_flags);
        let inner_methods = (*inner(file)).pMethods;
        if !inner_methods.is_null() {
            (*header).base.pMethods = methods_for(inner_methods);
            if rc == ffi::SQLITE_OK {
                (*header).counters = counted.map_or(std::ptr::null(), Arc::into_raw);
            }
        }
        rc
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of this VFS; its counters were an `Arc` leaked at the open.
    unsafe {
        let header = file.cast::<CountingFile>();
        let counters = std::mem::replace(&mut (*header).counters, std::ptr::null());
        if !counters.is_null() {
            drop(Arc::from_raw(counters));
        }
        methods(file).xClose.expect("xClose")(inner(file))
    }
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file of this VFS; the arguments are SQLite's, passed on.
    unsafe {
        if let Some(counters) = counters(file) {
            counters.read(amount as u64);
        }
        methods(file).xRead.expect("xRead")(inner(file), buf, amount, offset)
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: as `x_read`.
    unsafe {
        if let Some(counters) = counters(file) {
            counters.write(amount as u64);
        }
        methods(file).xWrite.expect("xWrite")(inner(file), buf, amount, offset)
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: as `x_read`.
    unsafe {
        if let Some(counters) = counters(file) {
            counters.sync();
        }
        methods(file).xSync.expect("xSync")(inner(file), flags)
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: as `x_read`.
    unsafe { methods(file).xTruncate.expect("xTruncate")(inner(file), size) }
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: as `x_read`.
    unsafe { methods(file).xFileSize.expect("xFileSize")(inner(file), size) }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: as `x_read`.
    unsafe { methods(file).xLock.expect("xLock")(inner(file), level) }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: as `x_read`.
    unsafe { methods(file).xUnlock.expect("xUnlock")(inner(file), level) }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: as `x_read`.
    unsafe {
        methods(file)
            .xCheckReservedLock
            .expect("xCheckReservedLock")(inner(file), out)
    }
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: as `x_read`.
    unsafe { methods(file).xFileControl.expect("xFileControl")(inner(file), op, arg) }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `x_read`.
    unsafe {
        methods(file)
            .xSectorSize
            .map_or(4096, |method| method(inner(file)))
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `x_read`.
    unsafe {
        methods(file)
            .xDeviceCharacteristics
            .map_or(0, |method| method(inner(file)))
    }
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: as `x_read`; only offered when the wrapped file has it.
    unsafe { methods(file).xShmMap.expect("xShmMap")(inner(file), page, page_size, extend, out) }
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: as `x_shm_map`.
    unsafe { methods(file).xShmLock.expect("xShmLock")(inner(file), offset, n, flags) }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: as `x_shm_map`.
    unsafe { methods(file).xShmBarrier.expect("xShmBarrier")(inner(file)) }
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: as `x_shm_map`.
    unsafe { methods(file).xShmUnmap.expect("xShmUnmap")(inner(file), delete) }
}

/// `path` as a `file:` URI naming `counters` (registered with [`register_counters`]).
pub fn uri(path: &str, counters: i64) -> String {
    let mut uri = String::from("file:");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str(&format!("?{IO_PARAMETER}={counters}"));
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_escaped_in_its_uri() {
        assert_eq!(
            uri("/data/a b?#%.db", 7),
            "file:/data/a%20b%3F%23%25.db?userstore_io=7"
        );
    }

    #[test]
    fn counters_are_found_while_they_live() {
        let counters = Arc::new(IoCounters::default());
        let number = register_counters(&counters);
        assert!(counters_of(number).is_some());
        drop(counters);
        assert!(counters_of(number).is_none());
    }
}
