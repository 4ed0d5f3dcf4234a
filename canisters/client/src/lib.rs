//! An example of calling a userstore canister from another canister.
//!
//! The client is installed with the id of a store canister (B-tree or SQLite, they share one
//! Candid service) and makes inter-canister calls to it with ic-cdk's `Call` API. The store
//! must list the client among its writers for `insert_users` to be accepted; the client in
//! turn only forwards writes from its own controllers, so it does not widen who may write.
//!
//! Every failure is a [`ClientError`] value: what the store answered, or why the call did
//! not get an answer.

use candid::{CandidType, Principal};
use ic_cdk::call::{Call, CallFailed};
use serde::Deserialize;
use std::cell::Cell;
use userstore::{StoreError, User};

thread_local! {
    /// The store canister this client calls; set by `init` and `post_upgrade`.
    static STORE: Cell<Principal> = const { Cell::new(Principal::anonymous()) };
}

/// Why a client method failed.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The store canister answered with an error value.
    Store(StoreError),
    /// The call did not get an answer from the store: it was rejected (the store trapped,
    /// does not exist, or has no such method) or could not be sent.
    CallFailed {
        /// The IC's reject code, when the call was rejected (e.g. 3: destination invalid,
        /// 4: canister reject, 5: canister error).
        reject_code: Option<u32>,
        /// The reject message or the reason the call could not be sent.
        message: String,
    },
    /// The store's reply was not the Candid the client expects.
    UnexpectedReply {
        /// The Candid decoding error.
        message: String,
    },
    /// Only the client's controllers may write through it.
    Unauthorized {
        /// The principal that called.
        caller: Principal,
    },
}

impl From<CallFailed> for ClientError {
    fn from(failed: CallFailed) -> Self {
        let reject_code = match &failed {
            CallFailed::CallRejected(rejected) => Some(rejected.raw_reject_code()),
            _ => None,
        };
        let message = match &failed {
            CallFailed::CallRejected(rejected) => rejected.reject_message().to_string(),
            other => other.to_string(),
        };
        ClientError::CallFailed {
            reject_code,
            message,
        }
    }
}

/// Calls `method` of the store with `args` and decodes its `Result<T, StoreError>` reply.
async fn call_store<A, T>(method: &str, args: &A) -> Result<T, ClientError>
where
    A: candid::utils::ArgumentEncoder,
    T: CandidType + for<'de> Deserialize<'de>,
{
    let store = STORE.with(Cell::get);
    let response = Call::unbounded_wait(store, method).with_args(args).await?;
    let reply: Result<T, StoreError> =
        response
            .candid()
            .map_err(|error| ClientError::UnexpectedReply {
                message: error.to_string(),
            })?;
    reply.map_err(ClientError::Store)
}

/// Sets the store canister this client calls.
#[ic_cdk::init]
fn init(store: Principal) {
    STORE.with(|cell| cell.set(store));
}

/// Keeps calling the store given by the upgrade argument.
#[ic_cdk::post_upgrade]
fn post_upgrade(store: Principal) {
    init(store);
}

/// The store canister this client calls.
#[ic_cdk::query]
fn store() -> Principal {
    STORE.with(Cell::get)
}

/// Inserts `users` into the store in one batch (all or nothing); returns how many were
/// inserted. Only the client's controllers may call it.
#[ic_cdk::update]
async fn insert_users(users: Vec<User>) -> Result<u64, ClientError> {
    let caller = ic_cdk::api::msg_caller();
    if !ic_cdk::api::is_controller(&caller) {
        return Err(ClientError::Unauthorized { caller });
    }
    call_store("insert_users", &(users,)).await
}

/// Reads the users with these ids back from the store, one call each, in order.
#[ic_cdk::update]
async fn get_users(ids: Vec<u64>) -> Result<Vec<User>, ClientError> {
    let mut users = Vec::with_capacity(ids.len());
    for id in ids {
        users.push(call_store("get_user", &(id,)).await?);
    }
    Ok(users)
}

/// The number of users in the store.
#[ic_cdk::update]
async fn count_users() -> Result<u64, ClientError> {
    call_store("count_users", &()).await
}

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    /// The committed `client.did` is what this code exports.
    #[test]
    fn committed_candid_matches_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/client.did");
        let checked = candid_check::committed_candid_matches(&super::__export_service(), path);
        assert_eq!(checked, Ok(()));
    }

    /// The README's "calling the store from your canister" shows `call_store` as it is here.
    #[test]
    fn the_readme_shows_call_store_as_it_is() {
        let code = include_str!("lib.rs");
        let start = code.find("async fn call_store").expect("call_store");
        let end = start + code[start..].find("\n}\n").expect("end of call_store") + 3;
        let readme = include_str!("../../../README.md");
        assert!(
            readme.contains(&code[start..end]),
            "README.md must show call_store exactly as canisters/client/src/lib.rs has it"
        );
    }
}
