//! The user-table canister over SQLite on stable memory (see `userstore::SqliteStore`).
//!
//! Built for wasm32-wasip1 and converted with wasi2ic: ic-wasi-polyfill provides the WASI
//! calls SQLite makes and keeps the database file on stable memory
//! (`userstore::sqlite::stable_memory`). The library's lifecycle closes the connection in
//! `pre_upgrade` (so SQLite flushes everything it holds) and reopens it in `post_upgrade`,
//! with the configuration kept in stable memory or the one the upgrade argument gives.

use userstore::SqliteStore;

userstore::export_user_table_api!(SqliteStore, state_beside_stack);

/// The 64 KiB page the state had before it moved beside the stack (`build.rs`), kept in the
/// module's writable data where the state was and never read or written. The statics after
/// it and the heap stay where they were, so SQLite's buffers keep their offsets in their pages
/// and each call touches the pages it did but the state's: moved 70 KiB lower without it, some
/// calls touched other pages in its place (docs/floor.md, "The state in the stack's page"). A
/// page never touched costs nothing (docs/metering.md §6). It lands at the start of the
/// writable data, 64 KiB aligned, the rest of the data after it (read from the Wasm's data
/// segments; the committed figures, which CI measures again, move if it ever lands
/// elsewhere). A `static` that is not `mut` would go to the read-only data, and a zeroed one
/// to the zero-initialized section after the data, hence `mut` and the first byte.
#[cfg(target_family = "wasm")]
#[used]
static mut FORMER_STATE_PAGE: userstore::service::PageAligned<[u8; 65536]> =
    userstore::service::PageAligned({
        let mut bytes = [0; 65536];
        bytes[0] = 1;
        bytes
    });

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `sqlite.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/sqlite.did");
        let checked = candid_check::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }

    /// Every store canister exports the same service, by construction, but for its engine's
    /// configuration; this pins it.
    #[test]
    fn it_declares_the_same_service_as_the_b_tree_canister_but_its_configuration() {
        let btree = include_str!("../../btree/btree.did");
        let checked =
            candid_check::same_service_but_engine_config(btree, &super::__export_service());
        assert_eq!(checked, Ok(()));
    }
}
