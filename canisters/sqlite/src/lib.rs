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

    /// Both canisters export the same service, by construction; this pins it.
    #[test]
    fn both_canisters_declare_the_same_service() {
        let btree = include_str!("../../btree/btree.did");
        assert_eq!(btree.trim(), super::__export_service().trim());
    }
}
