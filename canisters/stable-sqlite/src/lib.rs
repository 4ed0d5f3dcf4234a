//! The user-table canister over SQLite whose pages live straight in stable memory (see
//! `userstore::StableSqliteStore`).
//!
//! Built for wasm32-wasip1 against ic-rusqlite's precompiled SQLite and converted with
//! wasi2ic, like `sqlite`; a VFS of the library keeps its pages in the virtual memory
//! `userstore::layout::STABLE_SQLITE_DATABASE_MEMORY_ID`, never in the polyfill's files,
//! and its journal in the heap. `pre_upgrade` leaves the connection open (every commit is
//! in stable memory; `StorageEngine::before_upgrade`), and `post_upgrade` opens it with the
//! configuration kept in stable memory or the one the upgrade argument gives.

use userstore::StableSqliteStore;

userstore::export_user_table_api!(StableSqliteStore, state_beside_stack);

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `stable-sqlite.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/stable-sqlite.did");
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
