//! SQLite's randomness inside a canister: a stream of its own for every Wasm instance.
//!
//! # Why
//! SQLite draws random numbers for more than `random()`: every rollback-journal header gets a
//! random checksum nonce, and a WAL gets random salts. With exclusive locking (which every
//! canister database uses) a `DELETE` or `PERSIST` journal outlives its transaction with its
//! header zeroed; what tells its stale records from those of the transaction being rolled
//! back is that their checksums were made with another nonce.
//!
//! SQLite seeds its generator once per process from the default VFS. Inside a canister the
//! unix VFS finds no `/dev/urandom` and falls back to the time in seconds and the process
//! id: the same seed for two instances started in the same second, and for every instance on
//! a runtime whose clock stands still. An upgraded canister then drew the nonces the previous
//! instance drew, and a rollback could replay a stale transaction's pages (the upgrade test
//! `a_rollback_after_an_upgrade_undoes_its_own_write_and_nothing_else` shows it).
//!
//! [`seed_for_instance`] makes the default VFS draw from a stream seeded by the canister's
//! instance number ([`crate::engine::EngineStorage::instance`]), which no earlier instance
//! had, and makes SQLite reseed from it. The stream is deterministic, so every replica
//! computes the same (a canister has no synchronous source of true randomness), and a nonce
//! only needs to differ from the ones earlier transactions of this database used.

use rusqlite::ffi;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The state of the stream the wrapped default VFS draws from.
static STATE: AtomicU64 = AtomicU64::new(0);

/// Whether the wrapper is the default VFS (decided once per process).
static WRAPPED: OnceLock<bool> = OnceLock::new();

/// The name of the wrapper: the default VFS with [`x_randomness`].
const WRAPPER_NAME: &std::ffi::CStr = c"userstore-seeded";

/// [`seed_for_instance`] as an engine's open needs it: an error if it cannot be done.
pub fn seed_randomness(instance: u64) -> Result<(), crate::StoreError> {
    if seed_for_instance(instance) {
        Ok(())
    } else {
        Err(crate::StoreError::storage(
            "seeding SQLite's randomness",
            "SQLite has no default VFS to draw from",
        ))
    }
}

/// Makes SQLite's random numbers, from now on, a stream seeded by `instance`; false if SQLite
/// has no default VFS to wrap. Call before opening a connection (it only affects what SQLite
/// draws after it).
pub fn seed_for_instance(instance: u64) -> bool {
    let wrapped = *WRAPPED.get_or_init(wrap_default_vfs);
    if wrapped {
        STATE.store(seed(instance), Ordering::SeqCst);
        // SAFETY: a zero length and a null buffer reset SQLite's generator, which reseeds
        // from the default VFS at its next use.
        unsafe { ffi::sqlite3_randomness(0, std::ptr::null_mut()) };
    }
    wrapped
}

/// Registers a copy of the default VFS with [`x_randomness`] as the new default.
fn wrap_default_vfs() -> bool {
    // The engine's page cache is chosen before SQLite initializes, which finding the default
    // VFS does.
    super::page_cache::install();
    // SAFETY: the default VFS lives as long as the process; the copy is leaked, so it does
    // too. It differs only in its name and `xRandomness`: every other method is the default
    // VFS's own, given a VFS whose fields (size of a file, path length, app data) are its.
    unsafe {
        let default = ffi::sqlite3_vfs_find(std::ptr::null());
        if default.is_null() {
            return false;
        }
        let mut wrapper = *default;
        wrapper.zName = WRAPPER_NAME.as_ptr();
        wrapper.xRandomness = Some(x_randomness);
        wrapper.pNext = std::ptr::null_mut();
        let wrapper = Box::into_raw(Box::new(wrapper));
        ffi::sqlite3_vfs_register(wrapper, 1) == ffi::SQLITE_OK
    }
}

/// The stream's first state for `instance`.
fn seed(instance: u64) -> u64 {
    mix(instance ^ 0x05ee_d0f1_a57a_1ce5)
}

/// Fills `buffer` from the SplitMix64 stream whose state is `state`.
fn fill(state: &AtomicU64, buffer: &mut [u8]) {
    for chunk in buffer.chunks_mut(8) {
        let step = state.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::SeqCst);
        let z = mix(step.wrapping_add(0x9e37_79b9_7f4a_7c15));
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
    // SAFETY: SQLite passes a buffer of `len` bytes, written whole here.
    fill(&STATE, unsafe {
        std::slice::from_raw_parts_mut(out.cast::<u8>(), len_bytes)
    });
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(instance: u64) -> [u8; 64] {
        let state = AtomicU64::new(seed(instance));
        let mut bytes = [0u8; 64];
        fill(&state, &mut bytes);
        bytes
    }

    #[test]
    fn each_instance_has_a_stream_of_its_own_and_every_replica_the_same_one() {
        assert_eq!(stream(1), stream(1));
        let streams: Vec<[u8; 64]> = (0..1_000).map(stream).collect();
        for (a, first) in streams.iter().enumerate() {
            for second in &streams[a + 1..] {
                assert_ne!(first[..8], second[..8], "two instances, one nonce");
            }
        }
        assert_ne!(stream(1)[..8], stream(1)[8..16], "a stream, not one value");
    }

    #[test]
    fn the_default_vfs_draws_from_the_stream() {
        assert!(seed_for_instance(7));
        // SAFETY: the default VFS is registered for the life of the process.
        let name =
            unsafe { std::ffi::CStr::from_ptr((*ffi::sqlite3_vfs_find(std::ptr::null())).zName) };
        assert_eq!(name, WRAPPER_NAME);
        // SAFETY: the default VFS's own method, given a buffer of 16 bytes.
        let mut bytes = [0u8; 16];
        let drawn = unsafe {
            let vfs = ffi::sqlite3_vfs_find(std::ptr::null());
            (*vfs).xRandomness.expect("xRandomness")(vfs, 16, bytes.as_mut_ptr().cast())
        };
        assert_eq!(drawn, 16);
        assert_ne!(bytes, [0u8; 16]);
    }
}
