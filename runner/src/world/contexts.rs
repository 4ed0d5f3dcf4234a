//! Call contexts (one per call a canister receives) and the callbacks of the
//! calls they made.

use crate::state::Closure;
use std::collections::BTreeMap;

/// Who is waiting for the answer of a call context.
#[derive(Debug, Clone)]
pub(super) enum Origin {
    /// The ingress message of the running [`super::World::update`].
    Ingress,
    /// Another canister's call, answered through `callback`.
    Request { callback: u64 },
}

/// A call being handled by a canister.
#[derive(Debug)]
pub(super) struct CallContext {
    pub origin: Origin,
    /// The caller (`msg_caller_*` in the method and in its callbacks).
    pub caller: Vec<u8>,
    /// Whether the call was answered (reply or reject).
    pub responded: bool,
    /// Calls made in this context whose response has not been processed.
    pub outstanding: usize,
    /// Instructions of the messages executed in this context so far.
    pub instructions: u64,
    /// `msg_deadline` of the method and its callbacks.
    pub deadline: u64,
}

/// The call contexts of one canister.
#[derive(Debug, Default)]
pub(super) struct CallContexts {
    open: BTreeMap<u64, CallContext>,
    next: u64,
}

impl CallContexts {
    /// Opens a call context; returns its id.
    pub fn open(&mut self, origin: Origin, caller: &[u8], deadline: u64) -> u64 {
        let id = self.next;
        self.next += 1;
        self.open.insert(
            id,
            CallContext {
                origin,
                caller: caller.to_vec(),
                responded: false,
                outstanding: 0,
                instructions: 0,
                deadline,
            },
        );
        id
    }

    pub fn get(&self, id: u64) -> Option<&CallContext> {
        self.open.get(&id)
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut CallContext> {
        self.open.get_mut(&id)
    }

    pub fn close(&mut self, id: u64) {
        self.open.remove(&id);
    }

    /// Drops every open call context (the run stopped at the message limit).
    pub fn clear(&mut self) {
        self.open.clear();
    }
}

/// The callbacks of a performed call, waiting for its response.
#[derive(Debug, Clone)]
pub(super) struct Callback {
    /// The calling canister (principal bytes).
    pub canister: Vec<u8>,
    /// The called canister (principal bytes).
    pub callee: Vec<u8>,
    /// Its call context that made the call.
    pub context: u64,
    /// The method called (for the trace).
    pub method: String,
    pub on_reply: Closure,
    pub on_reject: Closure,
    pub on_cleanup: Option<Closure>,
}
