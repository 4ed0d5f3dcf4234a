//! What travels through a [`super::World`]'s queue, and the trace of what ran.

use crate::errors::Reject;
use crate::state::Closure;

/// A message waiting in the queue.
#[derive(Debug)]
pub(super) enum Message {
    /// A call from canister `from` to method `method` of canister `to`.
    Request {
        from: Vec<u8>,
        to: Vec<u8>,
        method: String,
        arg: Vec<u8>,
        /// The callback (in the world's table) that gets the response.
        callback: u64,
        /// `msg_deadline` of the callee (0: none).
        deadline: u64,
    },
    /// The response to the call whose callback is `callback`.
    Response {
        callback: u64,
        payload: Result<Vec<u8>, Reject>,
    },
}

/// What kind of execution an [`ExecutedMessage`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutedKind {
    /// The update method called by [`super::World::update`].
    IngressUpdate,
    /// A method called by another canister (update method, or query method
    /// run replicated).
    Request,
    /// A reply callback.
    ReplyCallback,
    /// A reject callback.
    RejectCallback,
    /// The cleanup function of a call whose callback trapped.
    Cleanup,
}

/// One message executed by [`super::World::update`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutedMessage {
    /// The canister that executed it.
    pub canister: candid::Principal,
    /// Its kind.
    pub kind: ExecutedKind,
    /// The method called (ingress and requests) or, for callbacks and
    /// cleanups, the method of the call whose response they process.
    pub method: String,
    /// The table entry that ran (callbacks and cleanups).
    pub closure: Option<Closure>,
    /// Instructions it used, as [`crate::CallResult::instructions`] counts them
    /// (with the heap dirty-page charge when it completed).
    pub instructions: u64,
    /// The trap message if it trapped or exceeded a limit (its changes and
    /// calls were then discarded).
    pub trap: Option<String>,
    /// Its `debug_print` output.
    pub debug_output: Vec<String>,
}

impl ExecutedMessage {
    /// Whether it trapped (or exceeded a limit).
    pub fn trapped(&self) -> bool {
        self.trap.is_some()
    }
}
