//! The user-table canister over ic-sqlite-vfs 2.1 (see [`engine`]): a peer measured beside
//! userstore's engines, with their Candid service and their state in the stack's page (build.rs).

pub mod engine;
#[cfg(not(feature = "canbench"))]
userstore::export_user_table_api!(engine::IcSqliteVfsStore, state_beside_stack);

ic_cdk::export_candid!();

// The bench canister (feature `canbench`) exports its seeding methods beside the service: the
// committed Candid is the store canister's, checked without the feature (scripts/test.sh runs
// the tests both ways).
#[cfg(all(test, not(feature = "canbench")))]
mod tests {
    /// The committed `ic-sqlite-vfs.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ic-sqlite-vfs.did");
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

// Its bench canister's suite (feature `canbench`), last: an item above the service's macros
// would move their lines, which the Wasm's panic locations hold, and so the store canister's
// bytes. The bench canister has no service (above): the service's `init` would open the
// database, which one heap opens once, and the benches open it themselves, as the engines'
// bench canister opens its stores.
#[cfg(feature = "canbench")]
mod bench;
