//! Candid arguments read without `candid`'s decoder when they come in `candid`'s own encoding.
//!
//! A Candid message is `DIDL`, a type table, the argument types, then the values. `candid`'s
//! decoder turns the table into a type environment, checks every value against the expected
//! type through it and frees it all again: about 22,000 instructions of a 96,000-instruction
//! `insert_user` on the stable-memory SQLite canister, and 6,900 of a 41,000-instruction
//! `get_user` (the flame graphs in `docs/flamegraphs/` before this module).
//!
//! A client that encodes with the `candid` crate (Rust agents, other canisters built with
//! ic-cdk, this project's client canister and benchmarks) sends, for the same argument types,
//! the same table byte for byte: [`Args::HEADER`]. When a message starts with exactly that
//! header, [`read`] takes the values straight from the bytes. Anything else (another table
//! order, a subtype, an extra record field, a non-minimal LEB128, invalid UTF-8, trailing
//! bytes) goes to `candid`'s decoder with ic-cdk's configuration, so every message decodes to
//! the same value, or is refused with the same error, as with ic-cdk's generated decoding.
//! The tests check both halves: canonical messages take the direct path and agree with
//! `candid`, and every other message is left to `candid`.

use crate::User;
use candid::utils::ArgumentDecoder;
use candid::DecoderConfig;
use serde::de::DeserializeOwned;

/// The argument list of a store method, with `candid`'s encoding of its types.
pub trait Args: Sized {
    /// `DIDL`, the type table and the argument types, as `candid` encodes them for these
    /// types (pinned by the tests against `candid::encode_args`).
    const HEADER: &'static [u8];

    /// Reads the values that follow [`Self::HEADER`]; `None` if they are not exactly one
    /// canonical encoding of `Self`.
    fn read_values(values: &mut Values<'_>) -> Option<Self>;

    /// Decodes a whole message with `candid`, as ic-cdk's generated code does.
    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error>;
}

/// Decodes the arguments of a call: directly when `message` is in `candid`'s own encoding of
/// `A`, with `candid`'s decoder otherwise.
pub fn decode<A: Args>(message: &[u8]) -> Result<A, candid::Error> {
    match read::<A>(message) {
        Some(args) => Ok(args),
        None => A::decode_with_candid(message),
    }
}

/// The direct path alone: `Some` only if `message` is [`Args::HEADER`] followed by one
/// canonical encoding of the values and nothing else.
pub fn read<A: Args>(message: &[u8]) -> Option<A> {
    let mut values = Values {
        rest: strip_header(message, A::HEADER)?,
    };
    let args = A::read_values(&mut values)?;
    values.rest.is_empty().then_some(args)
}

/// `message` without `header`, if it starts with it.
///
/// Compared eight bytes at a time: inlined with a constant `header`, the comparison's bytes
/// become immediates in the code, and no page of the module's read-only data is touched, as
/// `strip_prefix`'s byte comparison through memory would (every page a message touches costs
/// instructions, docs/metering.md §6).
#[inline(always)]
fn strip_header<'a>(message: &'a [u8], header: &'static [u8]) -> Option<&'a [u8]> {
    if message.len() < header.len() {
        return None;
    }
    let (start, rest) = message.split_at(header.len());
    let mut words = header.chunks_exact(8).zip(start.chunks_exact(8));
    if !words.all(|(expected, actual)| word(expected) == word(actual)) {
        return None;
    }
    let tail = header.len() - header.len() % 8;
    (header[tail..] == start[tail..]).then_some(rest)
}

/// Eight bytes as a number.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// Longest argument message read onto the stack rather than into a heap allocation: every
/// one-row call's arguments fit.
#[cfg(feature = "canister")]
const STACK_ARGUMENT_BYTES: usize = 512;

/// Reads and decodes the arguments of the current call, trapping on a message that does not
/// decode (as ic-cdk's generated decoding does). A message of up to
/// [`STACK_ARGUMENT_BYTES`] is read into a buffer on the stack: ic-cdk's `msg_arg_data`
/// allocates one on the heap, which in an update costs an allocation, a free and a dirtied
/// heap page (docs/metering.md §6).
#[cfg(feature = "canister")]
pub fn call_args_or_trap<A: Args>() -> A {
    with_message(|message| match decode(message) {
        Ok(args) => args,
        Err(error) => ic_cdk::trap(format!("decoding the arguments: {error}")),
    })
}

/// Lends the current call's argument message to `f`: on the stack when it has at most
/// [`STACK_ARGUMENT_BYTES`], on the heap otherwise.
#[cfg(feature = "canister")]
fn with_message<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    let len = ic0::msg_arg_data_size();
    // Not zeroed: the system API fills the part that is read.
    let mut stack = [std::mem::MaybeUninit::<u8>::uninit(); STACK_ARGUMENT_BYTES];
    match stack.get_mut(..len) {
        Some(buffer) => {
            ic0::msg_arg_data_copy_uninit(buffer, 0);
            // SAFETY: msg_arg_data_copy_uninit initialized all of `buffer` (or trapped).
            f(unsafe { &*(buffer as *const [std::mem::MaybeUninit<u8>] as *const [u8]) })
        }
        None => {
            // Not zeroed either (ic-cdk's `msg_arg_data` zeroes the whole buffer first).
            let mut heap = Vec::with_capacity(len);
            ic0::msg_arg_data_copy_uninit(&mut heap.spare_capacity_mut()[..len], 0);
            // SAFETY: msg_arg_data_copy_uninit initialized the first `len` bytes (or trapped).
            unsafe { heap.set_len(len) };
            f(&heap)
        }
    }
}

/// The id and username of a call about one user, borrowed from its argument message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdAndName<'a> {
    /// The id.
    pub id: u64,
    /// The username.
    pub username: &'a str,
}

/// The arguments of a call that carry one id and one username, read without allocating: on
/// the direct path the username is borrowed from the message (a `String` would be a heap
/// allocation, and so touched heap pages, docs/metering.md §6).
pub trait NamedArgs {
    /// The owned arguments: what `candid` decodes a message in another encoding into.
    type Owned: Args;

    /// The id and username of the owned arguments.
    fn parts(owned: &Self::Owned) -> IdAndName<'_>;
}

/// `insert_user`'s `(record { id : nat64; username : text })`.
pub struct InsertUserArgs;

impl NamedArgs for InsertUserArgs {
    type Owned = User;

    fn parts(user: &User) -> IdAndName<'_> {
        IdAndName {
            id: user.id,
            username: &user.username,
        }
    }
}

/// `update_username`'s `(nat64, text)`.
pub struct RenameArgs;

impl NamedArgs for RenameArgs {
    type Owned = (u64, String);

    fn parts((id, username): &(u64, String)) -> IdAndName<'_> {
        IdAndName { id: *id, username }
    }
}

/// The direct path of [`NamedArgs`]: both messages hold, after their header, a `nat64` and a
/// `text` (a `User`'s fields in the order of their hashes, `id` first).
pub fn read_named<A: NamedArgs>(message: &[u8]) -> Option<IdAndName<'_>> {
    let mut values = Values {
        rest: strip_header(message, <A::Owned as Args>::HEADER)?,
    };
    let id = values.nat64()?;
    let username = values.text_ref()?;
    values.rest.is_empty().then_some(IdAndName { id, username })
}

/// Calls `f` with the id and username of the current call's arguments: borrowed from the
/// message on the direct path, from `candid`'s decoding otherwise. Traps on a message that
/// does not decode, as ic-cdk's generated decoding does.
#[cfg(feature = "canister")]
pub fn with_named_args_or_trap<A: NamedArgs, R>(f: impl FnOnce(IdAndName<'_>) -> R) -> R {
    with_message(|message| match read_named::<A>(message) {
        Some(parts) => f(parts),
        None => match <A::Owned as Args>::decode_with_candid(message) {
            Ok(owned) => f(A::parts(&owned)),
            Err(error) => ic_cdk::trap(format!("decoding the arguments: {error}")),
        },
    })
}

/// Calls `f` with the username of a `(text)` message (`get_user_by_name`): borrowed from the
/// message on the direct path, from `candid`'s decoding otherwise. Traps on a message that
/// does not decode, as ic-cdk's generated decoding does.
#[cfg(feature = "canister")]
pub fn with_text_arg_or_trap<R>(f: impl FnOnce(&str) -> R) -> R {
    with_message(|message| match read_text(message) {
        Some(text) => f(text),
        None => match String::decode_with_candid(message) {
            Ok(owned) => f(&owned),
            Err(error) => ic_cdk::trap(format!("decoding the arguments: {error}")),
        },
    })
}

/// The direct path of a `(text)` message: the text, borrowed.
pub fn read_text(message: &[u8]) -> Option<&str> {
    let mut values = Values {
        rest: strip_header(message, String::HEADER)?,
    };
    let text = values.text_ref()?;
    values.rest.is_empty().then_some(text)
}

/// The values part of a message, consumed from the front.
#[derive(Debug)]
pub struct Values<'a> {
    rest: &'a [u8],
}

impl<'a> Values<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(taken)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    fn nat64(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_le_bytes)
    }

    fn nat32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }

    /// An unsigned LEB128 in its shortest form that fits a `usize` (a length).
    fn length(&mut self) -> Option<usize> {
        let mut value: u64 = 0;
        for index in 0..10 {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7f);
            let shift = 7 * index;
            if shift == 63 && bits > 1 {
                return None;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                // A last byte of zero after others is a longer form than needed.
                if byte == 0 && index > 0 {
                    return None;
                }
                return usize::try_from(value).ok();
            }
        }
        None
    }

    fn text(&mut self) -> Option<String> {
        self.text_ref().map(str::to_owned)
    }

    /// A `text`, borrowed from the message.
    fn text_ref(&mut self) -> Option<&'a str> {
        let len = self.length()?;
        std::str::from_utf8(self.take(len)?).ok()
    }

    fn opt_nat64(&mut self) -> Option<Option<u64>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.nat64().map(Some),
            _ => None,
        }
    }

    /// `record { id : nat64; username : text }`: the fields in the order of their hashes,
    /// which is the order of `User::HEADER`'s table.
    fn user(&mut self) -> Option<User> {
        let id = self.nat64()?;
        let username = self.text()?;
        Some(User { id, username })
    }

    /// A `vec` of elements of at least `min_element_bytes` bytes each, read by `element`.
    /// The capacity is bounded by the bytes left, so a forged length cannot allocate more
    /// than the message could hold.
    fn vec<T>(
        &mut self,
        min_element_bytes: usize,
        element: impl Fn(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let len = self.length()?;
        if len > self.rest.len() / min_element_bytes {
            return None;
        }
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            items.push(element(self)?);
        }
        Some(items)
    }
}

/// ic-cdk's decoder configuration for method arguments (`ic-cdk-macros`, `export.rs`).
fn ic_cdk_decoder_config() -> DecoderConfig {
    let mut config = DecoderConfig::new();
    config.set_skipping_quota(10_000);
    config
}

/// `candid`'s decoding of a one-argument message, as ic-cdk's generated code does it.
fn candid_one<T: DeserializeOwned + candid::CandidType>(
    message: &[u8],
) -> Result<T, candid::Error> {
    candid_tuple::<(T,)>(message).map(|(value,)| value)
}

/// `candid`'s decoding of a message into an argument tuple, as ic-cdk's generated code does
/// it (an empty message counts as an empty argument list).
fn candid_tuple<T: for<'a> ArgumentDecoder<'a>>(message: &[u8]) -> Result<T, candid::Error> {
    let message: &[u8] = if message.is_empty() {
        b"DIDL\x00\x00"
    } else {
        message
    };
    candid::utils::decode_args_with_config(message, &ic_cdk_decoder_config())
}

/// The smallest encoding of a `User`: an 8-byte id and a one-byte text length.
const MIN_USER_BYTES: usize = 9;

/// The smallest encoding of a `nat64`.
const NAT64_BYTES: usize = 8;

/// `(nat64)`: `get_user` and `delete_user`.
impl Args for u64 {
    const HEADER: &'static [u8] = b"DIDL\x00\x01\x78";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        values.nat64()
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_one(message)
    }
}

/// `(record { id : nat64; username : text })`: `insert_user`.
impl Args for User {
    const HEADER: &'static [u8] =
        b"DIDL\x01\x6c\x02\xdb\xb7\x01\x78\x96\x8c\xae\x87\x02\x71\x01\x00";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        values.user()
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_one(message)
    }
}

/// `(vec record { id : nat64; username : text })`: `insert_users` and `update_users`.
impl Args for Vec<User> {
    const HEADER: &'static [u8] =
        b"DIDL\x02\x6d\x01\x6c\x02\xdb\xb7\x01\x78\x96\x8c\xae\x87\x02\x71\x01\x00";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        values.vec(MIN_USER_BYTES, Values::user)
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_one(message)
    }
}

/// `(vec nat64)`: `delete_users`.
impl Args for Vec<u64> {
    const HEADER: &'static [u8] = b"DIDL\x01\x6d\x78\x01\x00";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        values.vec(NAT64_BYTES, Values::nat64)
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_one(message)
    }
}

/// `(nat64, text)`: `update_username`.
impl Args for (u64, String) {
    const HEADER: &'static [u8] = b"DIDL\x00\x02\x78\x71";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        Some((values.nat64()?, values.text()?))
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_tuple(message)
    }
}

/// `(text)`: `get_user_by_name`.
impl Args for String {
    const HEADER: &'static [u8] = b"DIDL\x00\x01\x71";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        values.text()
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_one(message)
    }
}

/// `(opt nat64, nat32)`: `list_users`.
impl Args for (Option<u64>, u32) {
    const HEADER: &'static [u8] = b"DIDL\x01\x6e\x78\x02\x00\x79";

    fn read_values(values: &mut Values<'_>) -> Option<Self> {
        Some((values.opt_nat64()?, values.nat32()?))
    }

    fn decode_with_candid(message: &[u8]) -> Result<Self, candid::Error> {
        candid_tuple(message)
    }
}

#[cfg(test)]
mod tests;
