//! The user-table canister over a `StableBTreeMap` (see `userstore::BTreeStore`).
//!
//! Everything is the library's: `userstore::btree::BTreeCanisterStore` keeps the map in a
//! stable-memory region of its own (or, for canisters installed before that layout, in the
//! memory manager's virtual memory 1), the settings in the manager, and
//! `export_user_table_api!` defines the lifecycle and every Candid method, with the state in
//! the stack's top page (`build.rs` links the room for it).

use userstore::btree::BTreeCanisterStore;

userstore::export_user_table_api!(BTreeCanisterStore, state_beside_stack);

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `btree.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/btree.did");
        let checked = candid_check::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }
}
