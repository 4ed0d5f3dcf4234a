//! The messages between a [`super::World`]'s canisters: one FIFO queue of requests and
//! responses, the callbacks waiting for the responses, and the count of calls each canister
//! has outstanding to each callee (the replica's queue capacity, see `crate::system_api`).

use super::contexts::Callback;
use super::messages::Message;
use crate::errors::Reject;
use crate::state::OutgoingCall;
use std::collections::{BTreeMap, VecDeque};

/// Upper bound of `call_with_best_effort_response` timeouts (the replica's
/// MAX_CALL_TIMEOUT_SECONDS).
const MAX_CALL_TIMEOUT_SECONDS: u64 = 300;
const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// The queue, the callbacks and the outstanding calls of a world.
#[derive(Debug, Default)]
pub(super) struct Queue {
    messages: VecDeque<Message>,
    callbacks: BTreeMap<u64, Callback>,
    next_callback: u64,
    /// Per caller, per callee: calls whose response has not been processed.
    outstanding: BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, usize>>,
}

impl Queue {
    /// Whether no message is waiting.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The next message, in send order.
    pub fn pop(&mut self) -> Option<Message> {
        self.messages.pop_front()
    }

    /// Drops every message, callback and outstanding count.
    pub fn clear(&mut self) {
        self.messages.clear();
        self.callbacks.clear();
        self.outstanding.clear();
    }

    /// Per callee, the calls of canister `caller` whose responses are not processed yet.
    pub fn outstanding_of(&self, caller: &[u8]) -> BTreeMap<Vec<u8>, usize> {
        self.outstanding.get(caller).cloned().unwrap_or_default()
    }

    /// Registers the callbacks of `call`, performed by canister `from` in call context
    /// `context` at time `time`, counts it as outstanding and enqueues its request.
    pub fn send(&mut self, from: &[u8], context: u64, call: OutgoingCall, time: u64) {
        let callback = self.next_callback;
        self.next_callback += 1;
        *self
            .outstanding
            .entry(from.to_vec())
            .or_default()
            .entry(call.callee.clone())
            .or_default() += 1;
        self.callbacks.insert(
            callback,
            Callback {
                canister: from.to_vec(),
                callee: call.callee.clone(),
                context,
                method: call.method.clone(),
                on_reply: call.on_reply,
                on_reject: call.on_reject,
                on_cleanup: call.on_cleanup,
            },
        );
        // A bounded-wait call's deadline: now + timeout (at most 300 s).
        let deadline = call.timeout_seconds.map_or(0, |seconds| {
            let seconds = u64::from(seconds).min(MAX_CALL_TIMEOUT_SECONDS);
            time.saturating_add(seconds * NANOS_PER_SECOND)
        });
        self.messages.push_back(Message::Request {
            from: from.to_vec(),
            to: call.callee,
            method: call.method,
            arg: call.arg,
            callback,
            deadline,
        });
    }

    /// Enqueues the response to the call whose callback is `callback`.
    pub fn respond(&mut self, callback: u64, payload: Result<Vec<u8>, Reject>) {
        self.messages
            .push_back(Message::Response { callback, payload });
    }

    /// Takes the callback `callback` for its response, and forgets the call as outstanding.
    pub fn take_callback(&mut self, callback: u64) -> Option<Callback> {
        let callback = self.callbacks.remove(&callback)?;
        self.release(&callback.canister, &callback.callee);
        Some(callback)
    }

    /// Forgets one outstanding call of `caller` to `callee`.
    fn release(&mut self, caller: &[u8], callee: &[u8]) {
        let Some(per_callee) = self.outstanding.get_mut(caller) else {
            return;
        };
        if let Some(count) = per_callee.get_mut(callee) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                per_callee.remove(callee);
            }
        }
        if per_callee.is_empty() {
            self.outstanding.remove(caller);
        }
    }
}
