//! What the service layer asks of the canister it runs in: the caller, the controllers, the
//! performance counter, the sizes of its memories, and how to trap. [`IcEnv`] answers from
//! the IC (feature `canister`); native tests answer with a struct of their own.

use candid::Principal;

/// The environment of one call.
pub trait CallEnv {
    /// The principal that made the call.
    fn caller(&self) -> Principal;

    /// Whether `principal` controls the canister (a system call on the IC: asked only when
    /// needed).
    fn is_controller(&self, principal: &Principal) -> bool;

    /// Instructions the message has executed so far (`performance_counter(0)`, decoding of
    /// the request included).
    fn instructions_used(&self) -> u64;

    /// Stable memory size in 64 KiB pages.
    fn stable_memory_pages(&self) -> u64;

    /// Wasm heap size in 64 KiB pages.
    fn heap_pages(&self) -> u64;

    /// Stops the message with `message`; on the IC every change the message made is
    /// discarded.
    fn trap(&self, message: &str) -> !;
}

/// The IC's answers, through ic-cdk.
#[cfg(feature = "canister")]
#[derive(Clone, Copy, Debug, Default)]
pub struct IcEnv;

#[cfg(feature = "canister")]
impl CallEnv for IcEnv {
    /// The caller, read into a buffer on the stack: ic-cdk's `msg_caller` allocates one on
    /// the heap, which in an update costs an allocation and a free, and a dirtied heap page
    /// (docs/metering.md §6).
    fn caller(&self) -> Principal {
        let mut bytes = [0_u8; Principal::MAX_LENGTH_IN_BYTES];
        let len = ic0::msg_caller_size();
        let Some(caller) = bytes.get_mut(..len) else {
            ic_cdk::trap("the caller's principal is longer than a principal can be")
        };
        ic0::msg_caller_copy(caller, 0);
        Principal::from_slice(caller)
    }

    fn is_controller(&self, principal: &Principal) -> bool {
        ic_cdk::api::is_controller(principal)
    }

    fn instructions_used(&self) -> u64 {
        ic_cdk::api::performance_counter(0)
    }

    fn stable_memory_pages(&self) -> u64 {
        ic_cdk::stable::stable_size()
    }

    fn heap_pages(&self) -> u64 {
        #[cfg(target_family = "wasm")]
        {
            core::arch::wasm32::memory_size(0) as u64
        }
        #[cfg(not(target_family = "wasm"))]
        {
            0
        }
    }

    fn trap(&self, message: &str) -> ! {
        ic_cdk::trap(message)
    }
}

/// Replies `value` to the current call, encoded by [`super::reply::encode`] (the same bytes as
/// ic-cdk's own reply, without rebuilding the type table in every message), and returns the
/// marker an exported method returns for its Candid result type. Traps if `value` cannot be
/// encoded, as ic-cdk's reply does.
#[cfg(feature = "canister")]
pub fn reply<T: candid::CandidType + 'static>(value: T) -> std::marker::PhantomData<T> {
    send(|message| super::reply::encode_into(&value, message))
}

/// Replies `result` to the current call, encoded by [`super::reply::encode_result`] (an `Ok`
/// with the type of its value, a subtype of `Result<T, StoreError>`), and returns the marker an
/// exported method returns for its Candid result type. Traps if `result` cannot be encoded.
///
/// An `Ok` of a user, a count or nothing is built on the stack ([`super::reply::StackReply`]);
/// everything else in the kept reply buffer.
#[cfg(feature = "canister")]
pub fn reply_result<T: candid::CandidType + 'static>(
    result: Result<T, crate::StoreError>,
) -> std::marker::PhantomData<Result<T, crate::StoreError>> {
    if let Ok(value) = &result {
        let mut stack = super::reply::StackReply::default();
        if super::reply::append_ok_value(value, &mut stack) {
            if let Some(bytes) = stack.bytes() {
                ic_cdk::api::msg_reply(bytes);
                return std::marker::PhantomData;
            }
        }
    }
    send(|message| super::reply::encode_result_into(&result, message))
}

/// Replies the user `id` with the username `username` holds, or the error, as
/// `Result<User, StoreError>` (an `Ok` built on the stack: no `User`, no heap allocation).
#[cfg(feature = "canister")]
pub fn reply_user(
    id: u64,
    result: Result<&crate::UsernameBuf, crate::StoreError>,
) -> std::marker::PhantomData<Result<crate::User, crate::StoreError>> {
    match result {
        Ok(username) => {
            let mut stack = super::reply::StackReply::default();
            super::reply::append_ok_user(&mut stack, id, username.as_str());
            match stack.bytes() {
                Some(bytes) => ic_cdk::api::msg_reply(bytes),
                None => ic_cdk::trap("a user's reply is longer than its buffer"),
            }
            std::marker::PhantomData
        }
        Err(error) => reply_result(Err::<crate::User, _>(error)),
    }
}

#[cfg(feature = "canister")]
thread_local! {
    /// The buffer every reply is encoded into: kept, so that a reply allocates nothing once
    /// the buffer has grown to the largest reply so far.
    static REPLY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A larger reply buffer (a long page of users) is freed after the reply, not kept.
#[cfg(feature = "canister")]
const MAX_KEPT_REPLY_BYTES: usize = 64 * 1024;

/// Sends the reply `encode` writes, or traps with the encoder's error.
#[cfg(feature = "canister")]
fn send<T>(
    encode: impl FnOnce(&mut Vec<u8>) -> Result<(), candid::Error>,
) -> std::marker::PhantomData<T> {
    REPLY.with(|message| {
        let mut message = message.borrow_mut();
        match encode(&mut message) {
            Ok(()) => ic_cdk::api::msg_reply(message.as_slice()),
            Err(error) => ic_cdk::trap(format!("encoding the reply: {error}")),
        }
        if message.capacity() > MAX_KEPT_REPLY_BYTES {
            *message = Vec::new();
        }
    });
    std::marker::PhantomData
}
