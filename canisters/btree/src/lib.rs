//! The user-table canister over a `StableBTreeMap` (see `userstore::BTreeStore`).
//!
//! Everything is the library's: the map lives in the virtual memory
//! `userstore::layout::BTREE_USERS_MEMORY_ID` of the canister's memory manager, the settings
//! beside it, and `export_user_table_api!` defines the lifecycle and every Candid method.

use userstore::layout::CanisterMemory;
use userstore::BTreeStore;

userstore::export_user_table_api!(BTreeStore<CanisterMemory>);

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
