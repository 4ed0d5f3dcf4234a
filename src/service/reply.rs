//! Candid replies without rebuilding their type table in every message, and with the type
//! of the value they carry rather than the whole declared result type.
//!
//! A Candid message is the magic `DIDL`, a type table, the argument types, then the values.
//! Everything before the values depends only on the Rust type being sent, yet `candid`'s
//! encoder rebuilds it for every reply: it computes the type, clears and refills its type
//! environment and compares types structurally to number the table. For the store's reply
//! types (`Result<User, StoreError>` and the like) that work is most of a one-row call: about
//! 200,000 instructions of a 275,000-instruction `get_user` (see the traces in
//! `docs/RESULTS.md`). [`encode`] builds the prefix once per type and message type, keeps it
//! on the heap (which lives as long as the canister's Wasm instance), and serializes only the
//! value in every later reply, with `candid`'s own value serializer. The bytes are exactly
//! `candid::encode_one`'s: the tests compare them.
//!
//! The IC charges 50 instructions per reply byte (docs/metering.md §4), and the type table of
//! `Result<User, StoreError>` is about 245 of a `get_user` reply's 265 bytes: every case of
//! `StoreError` is described in every reply. [`encode_result`] therefore replies an `Ok` as
//! `variant { Ok : T }`, the declared `variant { Ok : T; Err : StoreError }` without its
//! `Err` case. Candid's subtyping (a variant with fewer cases is a subtype of one with more)
//! makes that a value of the declared type for every conforming decoder: the `candid` crate,
//! the JavaScript agent, Motoko. An `Err` is replied with the whole declared type.

use super::Stats;
use crate::{StoreError, User};
use candid::ser::ValueSerializer;
use candid::CandidType;
use std::any::TypeId;
use std::cell::RefCell;
use std::collections::BTreeMap;

thread_local! {
    /// The encoded type table and argument types, by reply type.
    static PREFIXES: RefCell<BTreeMap<TypeId, Vec<u8>>> = const { RefCell::new(BTreeMap::new()) };
}

/// The declared result `variant { Ok : T; Err : StoreError }` with its `Ok` case only: the
/// type of an `Ok` reply (see the module documentation).
#[derive(CandidType)]
enum OkOnly<'a, T> {
    /// The value, as in `Result::Ok`; the variant's name is `Result`'s.
    Ok(&'a T),
}

/// The key of [`OkOnly`]'s prefix for `T` (`TypeId` needs a `'static` type).
struct OkOnlyKey<T>(std::marker::PhantomData<T>);

/// `result` as a one-argument Candid message of the type `Result<T, StoreError>`: an `Ok` as
/// `variant { Ok : T }` (a subtype, with a much smaller type table), an `Err` as
/// `candid::encode_one(result)`.
pub fn encode_result<T: CandidType + 'static>(
    result: &Result<T, StoreError>,
) -> Result<Vec<u8>, candid::Error> {
    match result {
        Ok(value) => encode_keyed(TypeId::of::<OkOnlyKey<T>>(), &OkOnly::Ok(value)),
        Err(_) => encode(result),
    }
}

/// `value` as a one-argument Candid message, the same bytes as `candid::encode_one(value)`.
pub fn encode<T: CandidType + 'static>(value: &T) -> Result<Vec<u8>, candid::Error> {
    encode_keyed(TypeId::of::<T>(), value)
}

/// [`encode`], with the prefix kept under `key`, which stands for `T`'s type.
fn encode_keyed<T: CandidType>(key: TypeId, value: &T) -> Result<Vec<u8>, candid::Error> {
    let mut values = ValueSerializer::new();
    value.idl_serialize(&mut values)?;
    let values = values.get_result();
    PREFIXES.with(|prefixes| {
        let mut prefixes = prefixes.borrow_mut();
        let prefix = match prefixes.get(&key) {
            Some(prefix) => prefix,
            None => {
                // The first reply of this type: the full encoder, then what precedes the values.
                let full = candid::encode_one(value)?;
                let prefix_len = full.len().saturating_sub(values.len());
                prefixes
                    .entry(key)
                    .or_insert_with(|| full[..prefix_len].to_vec())
            }
        };
        let mut message = Vec::with_capacity(prefix.len() + values.len());
        message.extend_from_slice(prefix);
        message.extend_from_slice(values);
        Ok(message)
    })
}

/// Builds the prefixes of the query methods' replies. A query's heap changes are thrown away
/// with it, so a prefix a query builds is lost; without this, every query after an install
/// or upgrade paid the full encoder (about 200,000 instructions) until an update call of the
/// same reply type came along. `init` and `post_upgrade` call it; their heap changes stay.
pub fn prepare_query_replies() -> Result<(), candid::Error> {
    prepare_result(User::new(0, ""))?;
    prepare_result(Vec::<User>::new())?;
    prepare_result(0_u64)?;
    prepare_result(Stats {
        rows: 0,
        stable_memory_pages: 0,
        heap_pages: 0,
    })
}

/// Builds both prefixes of `Result<T, StoreError>` replies: the `Ok` one and the `Err` one.
/// A prefix depends on the type only, so any value of it will do.
fn prepare_result<T: CandidType + 'static>(sample: T) -> Result<(), candid::Error> {
    encode_result(&Err::<T, _>(StoreError::invalid_input("")))?;
    encode_result(&Ok::<_, StoreError>(sample)).map(drop)
}

/// Whether the prefix of `T` is built.
#[cfg(test)]
fn is_prepared<T: 'static>() -> bool {
    PREFIXES.with(|prefixes| prefixes.borrow().contains_key(&TypeId::of::<T>()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limit, StoreError, User};
    use candid::Principal;
    use proptest::prelude::*;

    fn errors() -> Vec<StoreError> {
        vec![
            StoreError::DuplicateId { id: 7 },
            StoreError::NotFound { id: u64::MAX },
            StoreError::invalid_input("username must not be empty"),
            StoreError::LimitExceeded {
                limit: Limit::BatchSize,
                max: 10_000,
                actual: 10_001,
            },
            StoreError::Unauthorized {
                caller: Principal::from_slice(&[3; 29]),
            },
            StoreError::invalid_config("no"),
            StoreError::storage("writing", "full"),
        ]
    }

    fn same_as_candid<T: CandidType + 'static>(value: T) {
        let expected = candid::encode_one(&value).expect("candid encodes");
        // Twice: the first builds the prefix, the second uses it.
        assert_eq!(encode(&value).expect("encodes"), expected);
        assert_eq!(encode(&value).expect("encodes"), expected);
    }

    #[test]
    fn the_query_replies_are_prepared_before_any_query() {
        assert!(!is_prepared::<Result<Vec<User>, StoreError>>());
        prepare_query_replies().unwrap();
        assert!(is_prepared::<Result<User, StoreError>>());
        assert!(is_prepared::<Result<Vec<User>, StoreError>>());
        assert!(is_prepared::<Result<u64, StoreError>>());
        assert!(is_prepared::<Result<super::Stats, StoreError>>());
        assert!(is_prepared::<OkOnlyKey<User>>());
        assert!(is_prepared::<OkOnlyKey<Vec<User>>>());
        assert!(is_prepared::<OkOnlyKey<u64>>());
        assert!(is_prepared::<OkOnlyKey<super::Stats>>());
        // A prepared prefix gives the same bytes as candid.
        same_as_candid(Ok::<u64, StoreError>(7));
        result_reply_decodes_as_declared(Ok::<u64, StoreError>(7));
    }

    /// An `Ok` reply is candid's encoding of `variant { Ok : T }`, an `Err` reply candid's
    /// encoding of the declared type, and both decode as the declared type to `result`.
    fn result_reply_decodes_as_declared<T>(result: Result<T, StoreError>)
    where
        T: CandidType + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
    {
        let expected = match &result {
            Ok(value) => candid::encode_one(OkOnly::Ok(value)).expect("candid encodes"),
            Err(_) => candid::encode_one(&result).expect("candid encodes"),
        };
        // Twice: the first builds the prefix, the second uses it.
        for _ in 0..2 {
            let reply = encode_result(&result).expect("encodes");
            assert_eq!(reply, expected);
            let decoded: Result<T, StoreError> =
                candid::decode_one(&reply).expect("decodes as the declared type");
            assert_eq!(decoded, result);
        }
    }

    #[test]
    fn every_result_reply_decodes_as_its_declared_type() {
        for error in errors() {
            result_reply_decodes_as_declared::<User>(Err(error.clone()));
            result_reply_decodes_as_declared::<u64>(Err(error.clone()));
            result_reply_decodes_as_declared::<()>(Err(error.clone()));
            result_reply_decodes_as_declared::<Vec<User>>(Err(error));
        }
        result_reply_decodes_as_declared::<()>(Ok(()));
        result_reply_decodes_as_declared::<u64>(Ok(0));
        result_reply_decodes_as_declared::<Vec<User>>(Ok(Vec::new()));
        result_reply_decodes_as_declared::<User>(Ok(User::new(1, "ada")));
    }

    /// The point of typing an `Ok` by its value: `StoreError`'s cases are not in the reply.
    #[test]
    fn an_ok_reply_leaves_the_error_type_out() {
        let user = Ok::<_, StoreError>(User::new(1, "ada"));
        let declared = candid::encode_one(&user).expect("candid encodes");
        let ours = encode_result(&user).expect("encodes");
        assert!(
            ours.len() * 4 < declared.len(),
            "{} bytes against candid's {}",
            ours.len(),
            declared.len()
        );
    }

    #[test]
    fn every_reply_type_encodes_as_candid_does() {
        for error in errors() {
            same_as_candid::<Result<User, StoreError>>(Err(error.clone()));
            same_as_candid::<Result<u64, StoreError>>(Err(error.clone()));
            same_as_candid::<Result<(), StoreError>>(Err(error.clone()));
            same_as_candid::<Result<Vec<User>, StoreError>>(Err(error));
        }
        same_as_candid::<Result<(), StoreError>>(Ok(()));
        same_as_candid::<Result<u64, StoreError>>(Ok(0));
        same_as_candid::<Result<Vec<User>, StoreError>>(Ok(Vec::new()));
    }

    proptest! {
        #[test]
        fn users_and_pages_encode_as_candid_does(
            id in any::<u64>(),
            name in "\\PC{0,40}",
            ids in prop::collection::vec(any::<u64>(), 0..20),
        ) {
            let user = User::new(id, name.clone());
            let expected = candid::encode_one(Ok::<User, StoreError>(user.clone())).unwrap();
            prop_assert_eq!(encode(&Ok::<User, StoreError>(user)).unwrap(), expected);
            let page: Vec<User> = ids.iter().map(|id| User::new(*id, name.clone())).collect();
            let expected = candid::encode_one(Ok::<Vec<User>, StoreError>(page.clone())).unwrap();
            prop_assert_eq!(encode(&Ok::<Vec<User>, StoreError>(page.clone())).unwrap(), expected);
            result_reply_decodes_as_declared(Ok::<User, StoreError>(User::new(id, name)));
            result_reply_decodes_as_declared(Ok::<Vec<User>, StoreError>(page));
        }
    }
}
