//! The user-table canister over the page tree (see `userstore::PageTreeStore`): a B+tree
//! whose leaves are whole 64 KiB pages of stable memory, in the canister's region past the
//! memory manager's first bucket, with its keys in the heap.

use userstore::engine::EngineMemory;
use userstore::PageTreeStore;

userstore::export_user_table_api!(PageTreeStore<EngineMemory>, state_beside_stack);

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `page-tree.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/page-tree.did");
        let checked = candid_check::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }

    /// The README's recipe of a store canister is this canister's code.
    #[test]
    fn the_readme_shows_this_canister_as_it_is() {
        let code = include_str!("lib.rs");
        let start = code.find("use userstore::engine").expect("the recipe");
        let end = code.find("ic_cdk::export_candid!();").expect("its end") + 25;
        let readme = include_str!("../../../README.md");
        assert!(
            readme.contains(&code[start..end]),
            "README.md must show canisters/page-tree/src/lib.rs's recipe as it is"
        );
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
