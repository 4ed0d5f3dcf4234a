//! The client canister (`canisters/client`) calling each store canister with inter-canister
//! calls: the code the README shows as "calling the store from your canister".

use candid::Principal;
// The client's own error type, as its Candid interface (`client.did`) declares it.
use client_canister::ClientError;
use std::rc::Rc;
use userstore::{StoreError, User};
use userstore_e2e::{controller, new_ic, owner, plain_args, stranger, Deployed, Ic, PlainArgs};

fn users(ids: impl IntoIterator<Item = u64>) -> Vec<User> {
    ids.into_iter()
        .map(|id| User::new(id, format!("user-{id:05}")))
        .collect()
}

/// A store canister and a client installed with its id.
struct Pair {
    store: Deployed,
    client: Deployed,
}

/// Installs the store `canister` with `writers` (the client's id is added when
/// `client_writes` is set) and a client pointed at it, on one IC.
fn pair(ic: &Rc<dyn Ic>, canister: &str, client_writes: bool) -> Pair {
    let store_id = ic.create_canister(vec![controller(), owner()]);
    let client_id = ic.create_canister(vec![controller(), owner()]);
    let mut writers = vec![owner()];
    if client_writes {
        writers.push(client_id);
    }
    let args = plain_args(PlainArgs {
        writers: Some(writers),
        ..PlainArgs::default()
    });
    let store = Deployed::install_on(ic, store_id, canister, args)
        .unwrap_or_else(|reject| panic!("install {canister}: {reject}"));
    let client = client_of(ic, client_id, store_id);
    Pair { store, client }
}

fn client_of(ic: &Rc<dyn Ic>, client_id: Principal, store_id: Principal) -> Deployed {
    Deployed::install_on(
        ic,
        client_id,
        "client",
        candid::encode_one(store_id).unwrap(),
    )
    .unwrap_or_else(|reject| panic!("install client: {reject}"))
}

fn insert(client: &Deployed, caller: Principal, batch: Vec<User>) -> Result<u64, ClientError> {
    let (reply,): (Result<u64, ClientError>,) = client
        .update(caller, "insert_users", (batch,))
        .expect("insert_users replies");
    reply
}

fn read_back(client: &Deployed, ids: Vec<u64>) -> Result<Vec<User>, ClientError> {
    let (reply,): (Result<Vec<User>, ClientError>,) = client
        .update(stranger(), "get_users", (ids,))
        .expect("get_users replies");
    reply
}

fn count_via(client: &Deployed) -> Result<u64, ClientError> {
    let (reply,): (Result<u64, ClientError>,) = client
        .update(stranger(), "count_users", ())
        .expect("count_users replies");
    reply
}

#[test]
fn the_client_inserts_reads_back_and_counts_through_every_store() {
    let ic = new_ic();
    for engine in engine_registry::engines() {
        let canister = engine.canister.as_str();
        let Pair { store, client } = pair(&ic, canister, true);
        let (target,): (Principal,) = client.query("store", ()).expect("store");
        assert_eq!(target, store.id);

        assert_eq!(
            insert(&client, owner(), users(0..100)),
            Ok(100),
            "{canister}"
        );
        assert_eq!(
            read_back(&client, vec![3, 50, 99]),
            Ok(users([3, 50, 99])),
            "{canister}"
        );
        assert_eq!(count_via(&client), Ok(100), "{canister}");
        assert_eq!(store.count_users(), 100, "{canister}");

        // The store's error values come back through the client unchanged, and change nothing.
        let mut clashing = users(200..210);
        clashing.push(User::new(7, "clash"));
        assert_eq!(
            insert(&client, owner(), clashing),
            Err(ClientError::Store(StoreError::DuplicateId { id: 7 })),
            "{canister}"
        );
        assert_eq!(
            read_back(&client, vec![1, 12_345]),
            Err(ClientError::Store(StoreError::NotFound { id: 12_345 })),
            "{canister}"
        );
        assert_eq!(store.count_users(), 100, "{canister}");
    }
}

#[test]
fn the_client_forwards_writes_only_from_its_controllers() {
    let ic = new_ic();
    let Pair { store, client } = pair(&ic, "btree", true);
    assert_eq!(
        insert(&client, stranger(), users(0..3)),
        Err(ClientError::Unauthorized { caller: stranger() })
    );
    assert_eq!(insert(&client, controller(), users(0..3)), Ok(3));
    assert_eq!(store.count_users(), 3);
}

#[test]
fn a_store_that_does_not_list_the_client_refuses_its_writes() {
    let ic = new_ic();
    for engine in engine_registry::engines() {
        let canister = engine.canister.as_str();
        let Pair { store, client } = pair(&ic, canister, false);
        assert_eq!(
            insert(&client, owner(), users(0..3)),
            Err(ClientError::Store(StoreError::Unauthorized {
                caller: client.id
            })),
            "{canister}"
        );
        assert_eq!(store.count_users(), 0, "{canister}");
        // Reads are public.
        assert_eq!(count_via(&client), Ok(0), "{canister}");
    }
}

#[test]
fn calls_that_get_no_answer_are_error_values() {
    let ic = new_ic();
    // A canister id that exists nowhere: the IC rejects with DESTINATION_INVALID (3).
    let missing = Principal::from_slice(&[0xfe; 10]);
    let client_id = ic.create_canister(vec![controller(), owner()]);
    let client = client_of(&ic, client_id, missing);
    match count_via(&client) {
        Err(ClientError::CallFailed {
            reject_code: Some(3),
            ..
        }) => {}
        other => panic!("a call to a missing canister gave {other:?}"),
    }
    // A canister without a module: CANISTER_ERROR (5).
    let empty = ic.create_canister(vec![controller()]);
    let client_id = ic.create_canister(vec![controller(), owner()]);
    let client = client_of(&ic, client_id, empty);
    match count_via(&client) {
        Err(ClientError::CallFailed {
            reject_code: Some(5),
            ..
        }) => {}
        other => panic!("a call to an empty canister gave {other:?}"),
    }
    // A canister that has the method but answers another type: the reply does not decode.
    let client_id = ic.create_canister(vec![controller(), owner()]);
    let confused = client_of(&ic, client_id, client.id);
    match count_via(&confused) {
        Err(ClientError::UnexpectedReply { .. }) => {}
        other => panic!("a reply of the wrong type gave {other:?}"),
    }
}
