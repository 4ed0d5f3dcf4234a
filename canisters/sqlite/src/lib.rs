//! The user-table canister over SQLite on stable memory (see `userstore::SqliteStore`).
//!
//! Built for wasm32-wasip1 and converted with wasi2ic: ic-wasi-polyfill provides the WASI
//! calls SQLite makes and keeps the database file on stable memory
//! (`userstore::sqlite::stable_memory`). The library's lifecycle closes the connection in
//! `pre_upgrade` (so SQLite flushes everything it holds) and reopens it in `post_upgrade`,
//! with the configuration kept in stable memory or the one the upgrade argument gives.

use userstore::SqliteStore;

userstore::export_user_table_api!(SqliteStore);

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
