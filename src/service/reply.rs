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
//!
//! The values of the replies a store sends most (`Ok` of a user, a page of users, a count or
//! nothing) are written by hand ([`append_ok_value`]) into one buffer of the final size:
//! `candid`'s value serializer dispatches per field and grows its buffer by reallocation,
//! about 2,500 instructions of a `get_user` reply. The bytes are the same; the tests compare.

use super::Stats;
use crate::{StoreError, User};
use candid::ser::ValueSerializer;
use candid::CandidType;
use std::any::{Any, TypeId};
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
    let mut message = Vec::new();
    encode_result_into(result, &mut message)?;
    Ok(message)
}

/// [`encode_result`] into `message` (cleared first), so that a caller can keep one buffer
/// for every reply instead of allocating and freeing one per message.
pub fn encode_result_into<T: CandidType + 'static>(
    result: &Result<T, StoreError>,
    message: &mut Vec<u8>,
) -> Result<(), candid::Error> {
    message.clear();
    match result {
        Ok(value) => {
            if append_ok_value(value, message) {
                Ok(())
            } else {
                encode_keyed(TypeId::of::<OkOnlyKey<T>>(), &OkOnly::Ok(value), message)
            }
        }
        Err(_) => encode_into(result, message),
    }
}

/// `DIDL`, the type table and the argument type of `variant { Ok : User }`: the table holds
/// the variant (`6b`, one case, `Ok`'s hash 17,724, type 1) and the record (`6c`, two
/// fields: `id`'s hash 23,515 `nat64` (`78`) and `username`'s 552,306,198 `text` (`71`)), then
/// one argument of type 0. The tests compare it with `candid`'s encoding.
const OK_USER_PREFIX: &[u8] =
    b"DIDL\x02\x6b\x01\xbc\x8a\x01\x01\x6c\x02\xdb\xb7\x01\x78\x96\x8c\xae\x87\x02\x71\x01\x00";
/// The same for `variant { Ok : vec User }` (`6d`: a vector of type 2).
const OK_USERS_PREFIX: &[u8] = b"DIDL\x03\x6b\x01\xbc\x8a\x01\x01\x6d\x02\x6c\x02\xdb\xb7\x01\x78\x96\x8c\xae\x87\x02\x71\x01\x00";
/// The same for `variant { Ok : nat64 }`.
const OK_NAT64_PREFIX: &[u8] = b"DIDL\x01\x6b\x01\xbc\x8a\x01\x78\x01\x00";
/// The same for `variant { Ok : null }` (`7f`), what `Ok(())` is in Candid.
const OK_NULL_PREFIX: &[u8] = b"DIDL\x01\x6b\x01\xbc\x8a\x01\x7f\x01\x00";

/// Where a reply's bytes go: a `Vec`, or [`StackReply`], a buffer on the stack.
pub trait Sink {
    /// Makes room for `additional` more bytes, if the sink can grow.
    fn reserve(&mut self, additional: usize);
    /// Appends `bytes`.
    fn extend_from_slice(&mut self, bytes: &[u8]);
    /// Appends `byte`.
    fn push(&mut self, byte: u8);
}

impl Sink for Vec<u8> {
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }

    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
}

/// Bytes of the largest reply [`StackReply`] holds: an `Ok` user with the longest username
/// and the type table takes under 200.
pub const STACK_REPLY_BYTES: usize = 256;

/// A reply built on the stack: the stack's top page is touched by every call anyway, while a
/// heap buffer touches (and in an update writes) a heap page of its own, which the IC charges
/// for (docs/metering.md §6).
pub struct StackReply {
    bytes: [u8; STACK_REPLY_BYTES],
    len: usize,
    overflowed: bool,
}

impl Default for StackReply {
    fn default() -> Self {
        StackReply {
            bytes: [0; STACK_REPLY_BYTES],
            len: 0,
            overflowed: false,
        }
    }
}

impl StackReply {
    /// The reply, or `None` if it did not fit.
    pub fn bytes(&self) -> Option<&[u8]> {
        (!self.overflowed).then(|| &self.bytes[..self.len])
    }
}

impl Sink for StackReply {
    fn reserve(&mut self, _additional: usize) {}

    fn extend_from_slice(&mut self, bytes: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + bytes.len()) {
            Some(room) => {
                room.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.overflowed = true,
        }
    }

    fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }
}

/// The message `variant { Ok : record { id; username } }` for the user `id` with `username`,
/// into `sink`: the reply of a user read into a [`crate::UsernameBuf`], with no `User` (and no
/// heap allocation) in between. The same bytes as [`encode_result`] of `Ok(user)`.
pub fn append_ok_user(sink: &mut impl Sink, id: u64, username: &str) {
    sink.reserve(OK_USER_PREFIX.len() + 1 + 8 + LEB128_MAX + username.len());
    append_constant(sink, OK_USER_PREFIX);
    sink.push(0);
    append_user_parts(sink, id, username);
}

/// Appends the message `variant { Ok : T }` with the value `Ok(value)` to `message` and
/// returns true, for a user, a page of users, a `u64` and `()`, whose type tables are
/// constants; returns false, appending nothing, for other types (the kept prefixes and
/// candid's serializer do them).
///
/// Candid's value encoding (the specification's `M`): a variant is the LEB128 index of its
/// case (`Ok` is 0), a record its fields in the order of their hashes (`id` 23,515 before
/// `username` 552,306,198), a `nat64` 8 bytes little-endian, a `text` its LEB128 length and
/// bytes, a `vec` its LEB128 length and elements, `null` nothing.
pub fn append_ok_value<T: 'static>(value: &T, message: &mut impl Sink) -> bool {
    let value = value as &dyn Any;
    if let Some(user) = value.downcast_ref::<User>() {
        message.reserve(OK_USER_PREFIX.len() + 1 + encoded_user_len(user));
        append_constant(message, OK_USER_PREFIX);
        message.push(0);
        append_user(message, user);
    } else if let Some(users) = value.downcast_ref::<Vec<User>>() {
        let len = users.iter().map(encoded_user_len).sum::<usize>();
        message.reserve(OK_USERS_PREFIX.len() + 1 + LEB128_MAX + len);
        message.extend_from_slice(OK_USERS_PREFIX);
        message.push(0);
        append_leb128(message, users.len());
        for user in users {
            append_user(message, user);
        }
    } else if let Some(number) = value.downcast_ref::<u64>() {
        message.reserve(OK_NAT64_PREFIX.len() + 9);
        append_constant(message, OK_NAT64_PREFIX);
        message.push(0);
        message.extend_from_slice(&number.to_le_bytes());
    } else if value.is::<()>() {
        message.reserve(OK_NULL_PREFIX.len() + 1);
        append_constant(message, OK_NULL_PREFIX);
        message.push(0);
    } else {
        return false;
    }
    true
}

/// Appends the constant `bytes`, eight at a time: inlined, the bytes become immediates in
/// the code, and no page of the module's read-only data is touched, as a copy from the
/// constant would (every page a message touches costs instructions, docs/metering.md §6).
#[inline(always)]
fn append_constant(sink: &mut impl Sink, bytes: &'static [u8]) {
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut copy = [0; 8];
        copy.copy_from_slice(word);
        sink.extend_from_slice(&u64::from_le_bytes(copy).to_le_bytes());
    }
    for byte in words.remainder() {
        sink.push(*byte);
    }
}

/// Most bytes a `usize` takes in LEB128.
const LEB128_MAX: usize = 10;

fn encoded_user_len(user: &User) -> usize {
    8 + LEB128_MAX + user.username.len()
}

fn append_user(message: &mut impl Sink, user: &User) {
    append_user_parts(message, user.id, &user.username);
}

fn append_user_parts(message: &mut impl Sink, id: u64, username: &str) {
    message.extend_from_slice(&id.to_le_bytes());
    append_leb128(message, username.len());
    message.extend_from_slice(username.as_bytes());
}

fn append_leb128(message: &mut impl Sink, mut value: usize) {
    while value >= 0x80 {
        message.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    message.push(value as u8);
}

/// `value` as a one-argument Candid message, the same bytes as `candid::encode_one(value)`.
pub fn encode<T: CandidType + 'static>(value: &T) -> Result<Vec<u8>, candid::Error> {
    let mut message = Vec::new();
    encode_into(value, &mut message)?;
    Ok(message)
}

/// [`encode`] into `message` (cleared first).
pub fn encode_into<T: CandidType + 'static>(
    value: &T,
    message: &mut Vec<u8>,
) -> Result<(), candid::Error> {
    message.clear();
    encode_keyed(TypeId::of::<T>(), value, message)
}

/// Appends `value`'s message to `message`, with the prefix kept under `key`, which stands
/// for `T`'s type.
fn encode_keyed<T: CandidType>(
    key: TypeId,
    value: &T,
    message: &mut Vec<u8>,
) -> Result<(), candid::Error> {
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
        message.reserve(prefix.len() + values.len());
        message.extend_from_slice(prefix);
        message.extend_from_slice(values);
        Ok(())
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
        shared_usernames: Vec::new(),
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
        // The `Ok` replies of users, pages and counts have constant prefixes; the others are
        // built.
        assert!(is_prepared::<OkOnlyKey<super::Stats>>());
        assert!(!is_prepared::<OkOnlyKey<User>>());
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
    fn a_reply_built_on_the_stack_is_the_same_bytes() {
        let user = User::new(7, "x".repeat(crate::limits::MAX_USERNAME_BYTES));
        let heap = encode_result(&Ok::<_, StoreError>(user.clone())).unwrap();
        let mut stack = StackReply::default();
        append_ok_user(&mut stack, user.id, &user.username);
        assert_eq!(stack.bytes(), Some(heap.as_slice()));
        for count in [0_u64, 1, u64::MAX] {
            let mut stack = StackReply::default();
            assert!(append_ok_value(&count, &mut stack));
            let heap = encode_result(&Ok::<_, StoreError>(count)).unwrap();
            assert_eq!(stack.bytes(), Some(heap.as_slice()));
        }
        let mut stack = StackReply::default();
        assert!(append_ok_value(&(), &mut stack));
        assert_eq!(
            stack.bytes(),
            Some(encode_result(&Ok::<_, StoreError>(())).unwrap().as_slice())
        );
        // A page of users does not fit, and says so.
        let page = vec![user; 3];
        let mut stack = StackReply::default();
        assert!(append_ok_value(&page, &mut stack));
        assert_eq!(stack.bytes(), None);
    }

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
            name in "\\PC{0,200}",
            ids in prop::collection::vec(any::<u64>(), 0..200),
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
